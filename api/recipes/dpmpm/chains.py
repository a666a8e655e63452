"""The DPMPM's chains fitted apart, as parts of the part runner (:func:`bayessdc.synthesis.runner.run_parts`):
one after another, on a local dask cluster or on a running scheduler, each kept under ``private/chains/`` so
that a rerun into the same folder loads it. Chain ``c`` draws from its own stream ``(seed, "chain", c)``, so
the posterior is the one the threads of :meth:`bayessdc.models.dpmpm.DPMPMSynthesizer.fit` give."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bayessdc.models.dpmpm import DPMPMSynthesizer, level_dim
from bayessdc.synthesis.runner import InferenceDataStore, run_parts

__all__ = ["fit_chains_apart"]


def fit_chains_apart(
    synthesizer: DPMPMSynthesizer,
    data: Any,
    seed: int,
    workdir: Path | None,
    say: Callable[[str], None],
    chains: range,
    scheduler: str | None,
    workers: int | None,
) -> Any:
    """Each of ``chains`` as a part of the part runner (kept under ``workdir / "chains"``), stacked in chain
    order (``scheduler`` and ``workers`` as :class:`bayessdc.DPMPM` takes them)."""

    def report(done: int, total: int, name: str, idata: Any, resumed: bool) -> None:
        took = "resumed" if resumed else f"{idata.attrs['sampling_seconds']:.1f} s"
        say(f"[{done}/{total}] {name} {took}")

    parts = run_parts(
        _FitChain(synthesizer, data, seed),
        [(f"chain-{c}", c) for c in chains],
        store=InferenceDataStore(Path(workdir) / "chains") if workdir is not None else None,
        scheduler=scheduler,
        workers=workers,
        progress=report,
        label="chains",
    )
    # Chains read back from the store carry text level coordinates (netCDF's limit): the data's own.
    levels = {level_dim(v): data.levels[v] for v in data.variables}
    for idata in parts:
        known = {k: v for k, v in levels.items() if k in idata.posterior.coords}
        idata.posterior = idata.posterior.assign_coords(known)
    return DPMPMSynthesizer.combine_chains(parts)


@dataclass(frozen=True)
class _FitChain:
    """The part runner's task for the DPMPM: ``(name, chain) ->`` that chain's posterior (picklable)."""

    synthesizer: DPMPMSynthesizer
    data: Any
    seed: int

    def __call__(self, name: str, chain: int) -> Any:
        return self.synthesizer.fit(self.data, self.seed, chains=[chain])
