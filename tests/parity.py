"""The private JSON files of the CLI tests' runs before the measurement redesign (issue 50), compared key by key.

``tests/data/before_measures/<synthesizer>/`` holds every JSON file of ``private/`` (and ``release/model.json``)
of the module-scoped run of ``tests/cli/test_<synthesizer>_cli.py`` at commit 23a1ef3, the last commit before the
synthesizers' own figure dictionaries (``private/risk.json`` and ``utility.json`` in each synthesizer's form) were
replaced by the registered measures, with the digest of that run's release and the platform it ran on.

:func:`assert_figures_kept` compares a run of the same test at the current code with it:

* every file but ``risk.json`` and ``utility.json`` key by key, numbers to 1e-12 (relative, or absolute near 0),
  except the timings (keys naming seconds) and the differences the caller names, each with its reason;
* every leaf of the old ``risk.json`` and ``utility.json``: found again through the caller's map, a dotted path
  pattern (:func:`fnmatch.fnmatch`) to a function of the new files and the leaf's path giving the same figure
  (to 1e-12), or to a sentence saying why the figure is no longer written. A leaf no pattern names fails the test.

The comparison applies where the release is the one of the baseline (its digest): the NUTS-sampled runs are
another draw on another platform (:mod:`tests.release_digest`), and the test skips there.
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.release_digest import release_digest

BEFORE = Path(__file__).parent / "data" / "before_measures"
TOLERANCE = 1e-12

#: The old figure files, each leaf of which must be found again or named (the categorical synthesizers' details
#: file too).
FIGURE_FILES = ("risk.json", "utility.json", "risk_details.json")


#: Criteria the default policy gained after the baseline, by measure, with the issue that added them. They are left
#: out of the policy the new files state before the comparison (the policy's description and digest change with
#: them), so every other criterion is still compared in its place.
LATER_CRITERIA = {
    "stratum_copied_records": "issue 51: records copied judged in each area of a release synthesized area by area",
    "stratum_attribute_disclosures": "issue 51: exact attribute disclosures judged in each area of a categorical "
    "release synthesized area by area, against the area's inherent maximum",
    "household_uniques_reappearing": "issue 51: households unique in the original reappearing in a household release",
    "household_attribute_inference": "issue 51: household secrets inferred from a household's members in a household "
    "release",
    "audited_cells": "issue 52: the intruder's audit of a published table (sensitive cells narrower than their "
    "protection)",
}

#: The policy's words that change with :data:`LATER_CRITERIA`, per file.
LATER_NAMED = {
    "model.json": {"disclosure_policy.description": "LATER_CRITERIA", "disclosure_policy.digest": "LATER_CRITERIA"},
    "policy.json": {"policy.description": "LATER_CRITERIA", "policy.digest": "LATER_CRITERIA"},
}


def _without_later_criteria(name: str, payload: Any) -> Any:
    """``payload`` of file ``name`` without the criteria of :data:`LATER_CRITERIA` (a copy)."""
    payload = json.loads(json.dumps(payload))

    def drop(policy: dict[str, Any]) -> None:
        policy["criteria"] = [c for c in policy.get("criteria", []) if c.get("measure") not in LATER_CRITERIA]

    if name == "model.json" and isinstance(payload.get("disclosure_policy"), dict):
        drop(payload["disclosure_policy"])
    if name == "policy.json":
        drop(payload["policy"])
        payload["not_applicable"] = [n for n in payload.get("not_applicable", [])
                                     if not any(n.startswith(f"{m}[") for m in LATER_CRITERIA)]  # fmt: skip
    return payload


class Files(Mapping[str, Any]):
    """The JSON files of a run folder, ``private/`` by name and ``model.json`` of ``release/``, read once
    (``flat``: every file in ``out`` itself, as the baselines hold them)."""

    def __init__(self, out: Path, flat: bool = False) -> None:
        self.out, self.flat = Path(out), flat
        self._cache: dict[str, Any] = {}

    def _path(self, name: str) -> Path:
        return self.out / name if self.flat else self.out / ("release" if name == "model.json" else "private") / name

    def __getitem__(self, name: str) -> Any:
        if name not in self._cache:
            path = self._path(name)
            if not path.is_file():
                raise KeyError(name)
            self._cache[name] = json.loads(path.read_text())
        return self._cache[name]

    def __iter__(self) -> Iterator[str]:
        names = sorted(p.name for p in (self.out if self.flat else self.out / "private").glob("*.json"))
        if not self.flat and self._path("model.json").is_file():
            names.append("model.json")
        return iter(names)

    def __len__(self) -> int:
        return len(list(iter(self)))

    # the measures' figures, as the map's functions read them

    def table(self, name: str) -> pd.DataFrame:
        """A private Parquet table of the run."""
        return pd.read_parquet(self.out / "private" / name)

    def details(self, measure: str) -> pd.DataFrame:
        """The details table of ``measure`` (``measures.json``)."""
        return pd.DataFrame(self["measures.json"][measure]["details"])

    def summary(self, measure: str, subset: str) -> dict[str, Any]:
        """The summary row of ``measure`` for ``subset`` (``measures.json``)."""
        rows = [r for r in self["measures.json"][measure]["summary"] if r["subset"] == subset]
        assert len(rows) == 1, f"{measure} has {len(rows)} summary rows for subset {subset!r}"
        return rows[0]

    def values(self, measure: str, subset: str) -> list[float]:
        """Every value of ``measure`` for ``subset``, in dataset order."""
        rows = [r for r in self["measures.json"][measure]["values"] if r["subset"] == subset]
        return [_number(r["value"]) for r in sorted(rows, key=lambda r: r["dataset"])]

    def reference(self, measure: str, subset: str, reference: str) -> dict[str, Any]:
        """Reference ``reference`` of ``measure`` for ``subset``."""
        rows = [r for r in self["measures.json"][measure]["references"]
                if r["subset"] == subset and r["reference"] == reference]  # fmt: skip
        assert len(rows) == 1, f"{measure} has {len(rows)} references {reference!r} for subset {subset!r}"
        return rows[0]


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def leaves(tree: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every leaf of a JSON tree with its path: a list's items by their position, or by ``measure[subset]`` where
    each item names a measure and a subset once (a policy's judgements and lever costs: a row added or removed then
    moves no other)."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from leaves(value, (*path, str(key)))
    elif isinstance(tree, list) and tree and any(isinstance(v, dict | list) for v in tree):
        keys = [f"{v['measure']}[{v['subset']}]" if isinstance(v, dict) and {"measure", "subset"} <= set(v) else None
                for v in tree]  # fmt: skip
        named = None not in keys and len(set(keys)) == len(keys)
        for i, value in enumerate(tree):
            yield from leaves(value, (*path, keys[i] if named else str(i)))
    else:
        yield path, tree


def same(a: Any, b: Any) -> bool:
    """Whether two leaves agree: numbers to :data:`TOLERANCE`, lists item by item, anything else exactly."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= TOLERANCE * max(1.0, abs(a), abs(b))
    if a is None and isinstance(b, float) and math.isnan(b):
        return True
    return a == b


def _timing(path: tuple[str, ...]) -> bool:
    return any("seconds" in part for part in path)


def differences(before: Any, after: Any, named: Mapping[str, str]) -> list[str]:
    """The leaves of ``before`` missing from ``after`` or different, and those only ``after`` has, except the
    timings and the paths matching a pattern of ``named`` (dotted, :func:`fnmatch.fnmatch`); a pattern starting
    with ``+`` allows new leaves only (rows appended to a list), the old ones still compared."""
    old, new = dict(leaves(before)), dict(leaves(after))
    out = []
    for path in sorted(set(old) | set(new)):
        dotted = ".".join(path)
        allowed = [p.removeprefix("+") for p in named if path not in old or not p.startswith("+")]
        if _timing(path) or any(fnmatch.fnmatchcase(dotted, p) for p in allowed):
            continue
        if path not in new:
            out.append(f"{dotted}: gone (was {old[path]!r})")
        elif path not in old:
            out.append(f"{dotted}: new ({new[path]!r})")
        elif not same(old[path], new[path]):
            out.append(f"{dotted}: {old[path]!r} -> {new[path]!r}")
    return out


Found = Callable[[Files, tuple[str, ...]], Any]


def assert_figures_kept(
    synthesizer: str,
    out: Path,
    moved: Mapping[str, Found | str],
    named: Mapping[str, Mapping[str, str]] | None = None,
) -> None:
    """Assert that the run in ``out`` reports every figure the baseline of ``synthesizer`` reported.

    Parameters
    ----------
    synthesizer
        The baseline's folder under :data:`BEFORE`.
    out
        The run folder of the same test at the current code.
    moved
        For the leaves of the old ``risk.json`` and ``utility.json``, by the pattern ``"<file>:<dotted path>"``:
        a function of the new files and the leaf's path giving the same figure, or the reason it is not written.
    named
        Per other file, the differences allowed, pattern to reason (new keys, moved keys).
    """
    before_dir = BEFORE / synthesizer
    pinned = json.loads((before_dir / "release_digest.json").read_text())
    digest = release_digest(out)
    if digest != pinned["digest"]:
        pytest.skip(f"the release differs from the baseline's ({digest}, baseline {pinned['digest']} taken on "
                    f"{pinned['platform']!r}): the figures of another draw cannot be compared to 1e-12")  # fmt: skip
    before, after, named = Files(before_dir, flat=True), Files(out), dict(named or {})
    problems = []
    assert "measures.json" in before, f"no baseline in {before_dir}"
    for name in sorted(set(before) - {"release_digest.json"}):
        if name in FIGURE_FILES:
            continue
        if name not in after:
            problems.append(f"{name}: not written any more")
            continue
        allowed = {**named.get(name, {}), **LATER_NAMED.get(name, {})}
        problems += [f"{name}: {d}" for d in differences(before[name], _without_later_criteria(name, after[name]),
                                                          allowed)]  # fmt: skip
    for name in FIGURE_FILES:
        if name not in before:
            continue
        for path, value in leaves(before[name]):
            key = f"{name}:{'.'.join(path)}"
            hit = next((p for p in moved if fnmatch.fnmatchcase(key, p)), None)
            if hit is None:
                problems.append(f"{key} = {value!r}: no longer reported, and no reason given")
            elif callable(moved[hit]):
                found = moved[hit](after, path)
                if not same(value, found):
                    problems.append(f"{key}: {value!r}, found as {found!r}")
    assert not problems, "\n".join(problems)
