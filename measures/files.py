"""The private JSON files of a release's measures, from the measure results alone (one writer for every release).

* ``measures.json``: every measure whole (:meth:`MeasureResult.to_dict`: its summary, values per dataset,
  references, notes and intervals), by name; :func:`bayessdc.load` reads it back.
* ``risk.json`` and ``utility.json``: the summaries of the risk and of the utility measures, by measure and
  subset: the pooled figure, its Monte Carlo error and 95% interval, the worst dataset and each reference's value,
  with the measure's title and unit; what a reader looking for "the risk figures" opens.

No synthesizer writes figures of its own: a figure a release reports is a registered measure
(:mod:`bayessdc.measures`), and these files are the same for every synthesizer.
"""

from __future__ import annotations

from typing import Any

from .base import MeasureSet, _records

__all__ = ["FILES", "measure_files"]

#: The files :func:`measure_files` writes.
FILES = ("measures.json", "risk.json", "utility.json")


def _by_kind(measured: MeasureSet, kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, result in measured.items():
        if result.kind != kind:
            continue
        rows = _records(result.summary())
        out[name] = {
            "title": result.title,
            "unit": result.unit,
            "better": result.better,
            "subsets": {str(r.pop("subset")): {k: v for k, v in r.items() if k not in ("measure", "kind")}
                        for r in rows},
        }  # fmt: skip
    return out


def measure_files(measured: MeasureSet) -> dict[str, dict[str, Any]]:
    """The JSON payloads of :data:`FILES` for ``measured``, by file name (``risk.json`` or ``utility.json`` only
    when the release has a measure of that kind)."""
    files = {"measures.json": measured.to_dict()}
    for kind in ("risk", "utility"):
        payload = _by_kind(measured, kind)
        if payload:
            files[f"{kind}.json"] = payload
    return files
