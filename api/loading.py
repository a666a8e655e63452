"""Load what a run saved: ``bsd.load(folder)`` gives back the :class:`~bayessdc.Release` it wrote.

A run's folder (``bsd.synthesize(..., out=folder)``, :meth:`bayessdc.Release.save`, ``bayessdc COMMAND --out
folder``) holds ``release/`` (the synthetic datasets and the model's description) and ``private/`` (the
diagnostics and posteriors, the measures, the policy's verdict, the synthesizer's own risk and utility
figures). :func:`load` reads them into a release equal to the one the run had in memory, except for what was
never written: the confidential records (so options of :meth:`~bayessdc.Release.risk` that recompute from
them are not available, and a saved report is not redrawn).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from .errors import InputError
from .evaluation import EVALUATED
from .release import Diagnostics, Release

__all__ = ["load"]

#: Files of ``private/`` read into named fields (the others are ``private_json``/``private_tables``).
_KNOWN = {"run.json", "diagnostics.json", "measures.json", "policy.json", "risk.json", "utility.json",
          "release.json", "risk_utility.json"}  # fmt: skip


class _NetCDFPosteriors(Mapping[str, Any]):
    """The posterior of each fit, opened from its netCDF file when asked for."""

    def __init__(self, paths: dict[str, Path]) -> None:
        self.paths = paths

    def __getitem__(self, name: str) -> Any:
        import arviz as az

        from bayessdc.synthesis.output import read_inference_data

        path = self.paths[name]
        if path.parent.name == "groups":  # a group's posterior: classic netCDF (write_inference_data)
            return read_inference_data(path)
        import xarray as xr

        root = xr.load_dataset(path, engine="h5netcdf")
        if root.data_vars:  # the gated quantities of the posterior, saved as one dataset
            return az.InferenceData(posterior=root)
        idata = az.from_netcdf(path, engine="h5netcdf")  # ArviZ's own netCDF-4 groups
        for group in idata.groups():
            getattr(idata, group).load()  # read into memory: the file is not held open
        return idata

    def __iter__(self) -> Iterator[str]:
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)


def _posteriors(private: Path) -> Mapping[str, Any]:
    """``posterior.nc`` (the fit ``all``), ``posterior_<fit>.nc``, or ``groups/<fit>.posterior.nc``; and a stage's
    posteriors, ``<stage>.posterior.nc`` (the fit ``<stage>``) and ``<stage>.posterior_<fit>.nc`` (``<stage>/<fit>``),
    as the area model of a CART release whose area is synthesized writes them
    (:func:`bayessdc.pipeline.areas.stage_parts`: ``private/area_model.posterior.nc``, the fit ``area_model``)."""
    paths: dict[str, Path] = {}
    groups = private / "groups"
    if groups.is_dir():
        paths.update({p.name.removesuffix(".posterior.nc"): p for p in sorted(groups.glob("*.posterior.nc"))})
    for path in sorted(private.glob("posterior*.nc")):
        name = path.stem.removeprefix("posterior").removeprefix("_") or "all"
        paths[name] = path
    for path in sorted(private.glob("*.posterior*.nc")):
        stage, _, rest = path.stem.partition(".")
        if stage and rest == "posterior":
            paths[stage] = path
        elif stage and rest.startswith("posterior_"):
            paths[f"{stage}/{rest.removeprefix('posterior_')}"] = path
    return _NetCDFPosteriors(paths)


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def load(folder: str | os.PathLike[str]) -> Release:
    """The release a run wrote to ``folder``.

    Parameters
    ----------
    folder
        A run's output folder (it holds ``release/`` and ``private/``).

    Returns
    -------
    bayessdc.Release
        Its synthetic datasets, description, diagnostics (the posteriors as saved, opened from their files
        when asked for: the Dirichlet-process synthesizers save the quantities their gates read, not every
        draw of every parameter; a stage's posterior under the name the run held it by, as the area model's,
        ``area_model``, of a CART release whose area is synthesized), measures
        (:attr:`~bayessdc.Release.measured`, so :meth:`~bayessdc.Release.risk`,
        :meth:`~bayessdc.Release.utility` and :meth:`~bayessdc.Release.judge` work), the disclosure
        policy's verdict, and the synthesizer's own figures.

    Raises
    ------
    InputError
        When ``folder`` holds no release (a refused or unfinished run: its ``private/`` says why).

    Examples
    --------
    >>> import tempfile
    >>> import bayessdc as bsd
    >>> from bayessdc.models.cart import simulate_acs_persons
    >>> out = tempfile.mkdtemp()
    >>> release = bsd.synthesize(simulate_acs_persons(200, seed=1), bsd.CART(bootstrap=10),
    ...                          synthesize="education", keep="age,sex", m=2, out=out, progress=False)
    >>> loaded = bsd.load(out)
    >>> loaded.synthetic.equals(release.synthetic), loaded.m, loaded.synthesizer
    (True, 2, 'cart')
    """
    from bayessdc.measures import MeasureResult, MeasureSet
    from bayessdc.policy import Criterion, Policy, default_policy, judge

    root = Path(folder)
    released, private = root / "release", root / "private"
    evaluation = not released.exists() and (private / EVALUATED / "model.json").is_file()
    if evaluation:  # bsd.evaluate's folder: the files it judged, kept in private/ (an evaluation releases nothing)
        released = private / EVALUATED
    missing = [p.relative_to(root).as_posix() for p in (released / "model.json", released / "synthetic.parquet")
               if not p.is_file()]  # fmt: skip
    if missing:
        why = (f"; {private / 'diagnostics.json'} and {private / 'policy.json'} say why it was refused"
               if private.is_dir() else "")  # fmt: skip
        raise InputError(f"{root} holds no release (no {', '.join(missing)}): not a finished bayessdc run{why}")
    description = _read_json(released / "model.json")
    synthetic = pd.read_parquet(released / "synthetic.parquet")
    run = _read_json(private / "run.json") if (private / "run.json").is_file() else {}
    about = _read_json(private / "release.json") if (private / "release.json").is_file() else {}
    summary = _read_json(private / "diagnostics.json") if (private / "diagnostics.json").is_file() else {}
    diagnostics = Diagnostics(_posteriors(private), summary, passed=bool(summary.get("passed", True)),
                              allow_unconverged=bool(summary.get("allow_unconverged", False)))  # fmt: skip
    synthesizer = about.get("synthesizer") or run.get("synthesizer", "")
    private_json = {path.name: _read_json(path) for path in sorted(private.glob("*.json")) if path.name not in _KNOWN}
    private_tables = {path.name: pd.read_parquet(path) for path in sorted(private.glob("*.parquet"))}
    measured = None
    if (private / "measures.json").is_file():
        stored = _read_json(private / "measures.json")
        measured = MeasureSet(MeasureResult.from_dict(payload) for payload in stored.values())
    verdict = None
    stated = description.get("disclosure_policy")
    if stated and measured is not None:
        # the verdict is the stated policy applied to the stored measures: the same judgement as the run's
        policy = default_policy() if stated.get("builtin") else Policy(
            name=stated["name"], criteria=tuple(Criterion.from_dict(c) for c in stated.get("criteria", [])),
            reported=dict(stated.get("reported_not_judged", {})), description=stated.get("description", ""),
            digest=str(stated.get("digest", "")).removeprefix("sha256:"),
        )  # fmt: skip
        verdict = judge(policy, measured, synthesizer, stated.get("released_under"))
        verdict.evaluation = evaluation
        if (private / "policy.json").is_file():  # what the levers cost, as the run recorded it (not recomputable)
            from .levers import LeverCost

            recorded = _read_json(private / "policy.json").get("lever_costs", [])
            verdict.lever_costs = [LeverCost.from_dict(cost) for cost in recorded]
    return Release(  # built once, from what the folder holds
        synthesizer=synthesizer,
        synthetic=synthetic,
        description=description,
        diagnostics=diagnostics,
        identity=run,
        m=int(about.get("m") or synthetic["synthetic"].nunique()),
        seed=int(about.get("seed", run.get("seed", 0))),
        seconds=float(about.get("seconds", 0.0)),
        facts=dict(about.get("facts", {})),
        private_json=private_json,
        private_tables=private_tables,
        measured=measured,
        policy=verdict,
        policy_tried=[verdict] if verdict is not None else [],
        loaded_from=root,
    )
