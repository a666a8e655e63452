"""``bayessdc demo``: every synthesizer on its bundled example, with a table of risk and utility figures."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import time
from pathlib import Path
from typing import Any

from bayessdc.policy import DisclosureRefused

from . import synthesizer

__all__ = ["DEMOS", "add_parser", "run"]

_log = logging.getLogger(__name__)

#: The demos run, in order: every synthesizer's (declared by its command), then controlled tabular adjustment's and
#: complementary cell suppression's.
DEMOS: tuple[str, ...] = (*(c.name for c in synthesizer.commands()), "cta", "suppress")


def _demo(name: str, out: Path, seed: int) -> list[dict[str, Any]]:
    """The rows of demo ``name``."""
    for command in synthesizer.commands():
        if command.name == name:
            return synthesizer.demo(command, out, seed)
    return importlib.import_module(f"bayessdc.cli.{name}").demo(out, seed)


def add_parser(subparsers: Any) -> None:
    """Register ``bayessdc demo``."""
    p = subparsers.add_parser(
        "demo",
        help="run every synthesizer on its bundled example and print risk and utility figures",
        description="Runs each synthesizer on its bundled example with small sampler settings, writes the "
        "outputs under OUT/<synthesizer>/ and prints a table of risk and utility figures.",
    )
    p.add_argument("--out", type=Path, default=Path("demo-output"), help="output folder (default demo-output)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", nargs="*", default=None, choices=DEMOS, type=lambda name: name.replace("_", "-"),
                   help="run only these demos")
    p.set_defaults(func=run)


def _format(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "n/a" if value is None else str(value)


def _policy_rows(name: str, out: Path) -> list[dict[str, Any]]:
    """The disclosure policy's verdict of a demo's release, read from its ``private/policy.json`` (a demo that
    tries a second setting, as flows does in ``flows-pooled/``, by its latest run)."""
    runs = [d for d in (out.iterdir() if out.is_dir() else []) if d.name == name or d.name.startswith(f"{name}-")]
    written = [d / "private" / "policy.json" for d in runs if (d / "private" / "policy.json").exists()]
    if not written:
        return []
    folder = max(written, key=lambda p: p.stat().st_mtime_ns).parent.parent
    verdict = json.loads((folder / "private" / "policy.json").read_text())
    judged = [j for j in verdict["judgements"] if j["passed"] is not None]
    met = sum(bool(j["passed"]) for j in judged)
    if not judged:
        value = "no criterion applies (figures reported)"
    else:
        value = f"{'met' if verdict['passed'] else 'FAILED'}: {met} of {len(judged)} criteria"
    if verdict.get("setting"):
        value += " under " + ", ".join(f"{k} = {v}" for k, v in verdict["setting"].items())
    label = f"disclosure policy ({verdict['policy']['name']})"
    return [{"synthesizer": name, "measure": label, "value": value}]


def run(args: argparse.Namespace) -> int:
    """Run the demos and print their figures."""
    rows: list[dict[str, Any]] = []
    for name in args.only or DEMOS:
        start = time.perf_counter()
        _log.info("running the %s demo ...", name)
        try:
            rows.extend(_demo(name, args.out, args.seed))
        except DisclosureRefused as err:  # said in the table, nothing released
            rows.append({"synthesizer": name, "measure": "release", "value": "refused by the disclosure policy"})
            _log.warning("the %s demo was refused: %s", name, err)
        rows.extend(_policy_rows(name, Path(args.out)))
        _log.info("the %s demo took %.1f s", name, time.perf_counter() - start)
    width = max(len(r["measure"]) for r in rows)
    print(f"\n{'synthesizer':<12} {'measure':<{width}} value")
    for r in rows:
        print(f"{r['synthesizer']:<12} {r['measure']:<{width}} {_format(r['value'])}")
    print(f"\noutputs in {args.out}/ (release/ may be published; private/ never)")
    print(f"each run's report: {args.out}/<synthesizer>/private/report.html")
    return 0
