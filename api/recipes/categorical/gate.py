"""The categorical synthesizers' release gate: gate datasets from draws spread over every chain, measured from their
codes in one thread per core, judged by :func:`bayessdc.synthesis.release_gate.judge_release`."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd

from bayessdc import progress as _progress
from bayessdc.measures import MeasureInput
from bayessdc.risk.release_figures import CategoricalReleaseFigures
from bayessdc.synthesis import streams
from bayessdc.synthesis.release_gate import ReleaseGatePolicy, ReleaseGateReport, judge_release
from bayessdc.synthesis.streams import Stream

__all__ = ["categorical_release_gate"]


def categorical_release_gate(
    gate: ReleaseGatePolicy,
    repetitions: int,
    prepared: Any,
    state: Any,
    seed: int,
    say: Callable[[str], None],
    divergences: int | None = None,
) -> ReleaseGateReport:
    """The release gate of a categorical fit (``prepared`` a ``CategoricalPrepared``, ``state`` a
    ``CategoricalFit``, whose ``inherent``, ``gate_frames`` and ``gate_kinds`` it fills): ``gate.datasets_per_chain``
    datasets from each chain not yet measured, the inherent scenarios (``repetitions`` of each) once."""
    from bayessdc.measures import compute_measures, registry
    from bayessdc.models.base import stack_draws
    from bayessdc.risk.identification import inherent_risk
    from bayessdc.synthesis.release_gate import measure_figures

    x = prepared
    columns = x.keep + x.synthesize
    figures = CategoricalReleaseFigures(x.original, x.synthesize, x.keep, x.known, ways=(1, 2, 3), pmse=True)
    if state.inherent is None:
        state.inherent = inherent_risk(x.original, x.synthesize, x.keep, x.known, repetitions=repetitions, seed=seed)
    synthesizer, posterior = state.synthesizer, state.idata.posterior
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    per_chain = gate.datasets_per_chain
    todo = [chain for chain in range(chains) if chain not in state.gate_frames]
    say(f"release gate: {per_chain} synthetic datasets from each of {len(todo)} chains ...")
    stacked = stack_draws(posterior)
    records = max(len(x.original), 1)
    batch = max(1, min(per_chain, 20_000_000 // records))  # bounds the memory of one batch of datasets
    # measures that read only the release figures are given them from the datasets' codes (at 1,000,000
    # records a dataset's frame cost more than its figures); any other gate measure gets the frames
    registered = registry()
    from_codes = all(registered[name].from_release_figures for name in gate.measures)
    # cheaper still where there are fewer (cell, value) pairs than records: datasets drawn as counts per cell of
    # identical records, when the synthesizer can (the DPMPM without structural zeros). A dataset's counts cost in
    # the pairs, its codes in the records (README, "Measured choices in the code")
    layout = None
    if from_codes and figures.counts_densely and hasattr(synthesizer, "synthesized_cell_counts"):
        gate_rng = streams.rng(seed, Stream.GATE)
        empty = synthesizer.synthesized_cell_counts(stacked.isel(sample=[]), prepared.data, gate_rng)
        if empty is not None and np.prod(empty.counts.shape[1:]) <= figures.n:  # C x V pairs; their layout once
            layout = figures.cell_layout(empty.cells, empty.values, empty.records)
            # a batch's counts within 16 MB: fresh pages for 20 datasets' counts made each 42 ms instead of 25 ms
            batch = max(1, min(batch, 2_000_000 // max(layout.full_key.size, 1)))

    def chain_figures(chain: int) -> tuple[pd.DataFrame, dict[str, Any]]:
        """The figures of one chain's gate datasets (its own stream: the same whatever runs beside it)."""
        frames, kinds = [], {}
        rng = streams.rng(seed, Stream.GATE, chain)
        positions = chain * draws + np.linspace(0, draws - 1, per_chain).round().astype(int)
        for start in range(0, per_chain, batch):
            chosen = positions[start : start + batch]
            numbers = np.arange(1, len(chosen) + 1)
            cache: dict[str, Any] = {"release_figures": figures}
            if layout is not None:
                cells = synthesizer.synthesized_cell_counts(stacked.isel(sample=chosen), prepared.data, rng)
                cache["categorical_figures"] = pd.DataFrame(
                    [{"synthetic": number, **figures.of_cell_counts(layout, counts)}
                     for number, counts in zip(numbers, cells.counts, strict=True)]
                )  # fmt: skip
                frame = pd.DataFrame({"synthetic": numbers})
            else:
                values = synthesizer.posterior_predictive(stacked.isel(sample=chosen), prepared.data, rng)
                joint = values.rename(sample="synthetic").assign_coords(synthetic=numbers)
                if from_codes:
                    cache["categorical_figures"] = _figures_from_codes(figures, synthesizer, prepared.data, joint)
                    frame = pd.DataFrame({"synthetic": numbers})  # the datasets' numbers: their figures are above
                else:
                    frame = synthesizer.release_frame(prepared.data, joint)[["synthetic", *columns]]
            data = MeasureInput(
                frame, x.original, released=columns, synthesized=x.synthesize, kept=x.keep,
                known_sets=x.known, partially_synthetic=True, inherent=state.inherent,
                repetitions=repetitions, seed=seed, cache=cache, details=False,
            )  # fmt: skip
            table, kinds = measure_figures(compute_measures(data, gate.measures))
            frames.append(table.drop(columns="synthetic").assign(chain=chain))
            bar.advance(len(chosen))
        return pd.concat(frames, ignore_index=True), kinds

    # chains in threads, one per core: the synthesis kernels release the GIL and numpy's passes over a
    # dataset's keys mostly do (1,000,000 records: 1.5x on 2 cores for the figures, 2x for the draws)
    cores = getattr(getattr(synthesizer, "settings", None), "cores", None) or os.cpu_count() or 1
    workers = max(1, min(len(todo), cores))
    with _progress.bar(len(todo) * per_chain, "release gate datasets") as bar:
        if workers > 1:
            with ThreadPoolExecutor(workers) as pool:
                done = list(pool.map(chain_figures, todo))
        else:
            done = [chain_figures(chain) for chain in todo]
    for chain, (frame, kinds) in zip(todo, done, strict=True):
        state.gate_frames[chain], state.gate_kinds = frame, kinds
    by_dataset = pd.concat([state.gate_frames[chain] for chain in range(chains)], ignore_index=True)
    return judge_release(by_dataset, state.gate_kinds, gate, divergences=divergences)


def _figures_from_codes(figures: CategoricalReleaseFigures, synthesizer: Any, data: Any, joint: Any) -> pd.DataFrame:
    """The release figures of every dataset of ``joint`` (dims ``(synthetic, item)``) from the synthesized
    columns' codes (the synthesizer's ``synthesized_codes``), as :meth:`CategoricalReleaseFigures.by_dataset` gives
    them from the datasets' frames: the same figures, without the frames."""
    coded = {}
    for column, (levels, codes) in synthesizer.synthesized_codes(data, joint).items():
        recode = figures.recoding(column, levels)
        if (recode < 0).any():
            used = np.flatnonzero(np.bincount(codes.ravel(), minlength=len(recode)))
            if (recode[used] < 0).any():
                bad = pd.Index(levels)[used[recode[used] < 0][0]]
                bad = bad.item() if isinstance(bad, np.generic) else bad
                raise ValueError(f"synthetic column {column!r} holds {bad!r}, a value the original never takes")
        coded[column] = codes if np.array_equal(recode, np.arange(len(recode))) else recode[codes]
    numbers = joint["synthetic"].to_numpy()
    rows = [
        {"synthetic": number, **figures.of_codes({c: codes[k] for c, codes in coded.items()})}
        for k, number in enumerate(numbers)
    ]
    return pd.DataFrame(rows)
