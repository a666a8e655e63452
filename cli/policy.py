"""``bayessdc policy``: print the built-in disclosure policy, or check a policy file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    """Register ``bayessdc policy``."""
    p = subparsers.add_parser(
        "policy",
        help="print the built-in disclosure policy (TOML), or check a policy file",
        description="Without arguments, prints bayessdc's default disclosure policy: the criteria every release is "
        "judged by, each with its source, and the figures reported but not judged. Save it, edit it and pass it "
        "to any command with --policy FILE. With --check FILE, reads a policy file and prints its criteria, or "
        "the line at fault (exit status 2).",
    )
    p.add_argument("--check", type=Path, default=None, metavar="FILE", help="a policy file to check")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the default policy, or check ``--check FILE``."""
    from bayessdc.policy import default_policy_text, load_policy

    if args.check is None:
        print(default_policy_text(), end="")
        return 0
    policy = load_policy(args.check)
    print(f"policy {policy.name!r} (sha256:{policy.digest}): {len(policy.criteria)} criteria")
    for criterion in policy.criteria:
        print(f"  {criterion.label()}" + (f"  [{', '.join(criterion.applies_to)}]" if criterion.applies_to else ""))
    for measure, why in policy.reported.items():
        print(f"  reported, not judged: {measure}" + (f" ({why})" if why else ""))
    return 0
