"""The library speaks Python; the command line maps its parameters to flags in one table (``bayessdc.cli.flags``)."""

import argparse
import ast
import re
from pathlib import Path

import pytest

from bayessdc.cli import build_parser
from bayessdc.cli.flags import PARAMETER_FLAGS, as_flags

ROOT = Path(__file__).resolve().parents[2]
#: The library's folders (everything but the command line).
LIBRARY = ("api", "models", "synthesis", "risk", "measures", "cta", "report")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
#: A command of a bench script (``bench/dpmpm.py --nuts``) names that script's options, not the library's.
BENCH_COMMAND = re.compile(r"bench/\S+\.py(\s+--[a-z][a-z0-9-]*)*")


def _messages(path: Path):
    """The string literals of a module (parts of f-strings included) that are not docstrings."""
    tree = ast.parse(path.read_text())
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def test_no_library_message_names_a_command_line_flag():
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text[:80]!r}"
        for folder in LIBRARY
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, text in _messages(path)
        if FLAG.search(BENCH_COMMAND.sub("", text))
    ]
    assert not found, "library messages naming --flags (name the parameter as name= instead):\n" + "\n".join(found)


def test_every_flag_of_the_table_is_an_option_of_a_command():
    parser = build_parser()
    options = set()
    for action in parser._subparsers._group_actions:  # the subcommands
        for sub in action.choices.values():
            options |= {o for a in sub._actions for o in a.option_strings}
    missing = {name: flag for name, flag in PARAMETER_FLAGS.items() if flag not in options}
    assert not missing


@pytest.mark.parametrize(
    ("library", "command_line"),
    [
        ("Run more chains (chains=17: the error falls", "Run more chains (--chains 17: the error falls"),
        ("or pass allow_unconverged=True to write", "or pass --allow-unconverged to write"),
        ("m=3 needs 3 draws; raise draws= or lower thin=", "--m 3 needs 3 draws; raise --draws or lower --thin"),
        ("the prior (phi_prior=weakly-informative)", "the prior (--phi-prior weakly-informative)"),
        ("a gate needs datasets_per_chain= of 2", "a gate needs --gate-datasets of 2"),
        ("sizes=3 and settings.chains=4 stay", "sizes=3 and settings.chains=4 stay"),  # not parameters of the table
    ],
)
def test_parameters_become_flags_worked_by_hand(library, command_line):
    assert as_flags(library) == command_line


@pytest.mark.parametrize(
    ("command", "recipe"),
    [("dpmpm", "DPMPM"), ("dp-areal", "DPAreal"), ("flows", "Flows"), ("spatial", "Spatial"), ("cart", "CART")],
)
def test_the_number_of_datasets_defaults_to_the_recipes_own(command, recipe):
    """One value per default: ``--m`` is left to ``bsd.synthesize``, which takes the recipe's ``default_m``;
    the help states that value."""
    import bayessdc as bsd

    parser = build_parser()
    (sub,) = [a.choices[command] for a in parser._subparsers._group_actions]
    (m,) = [a for a in sub._actions if "--m" in a.option_strings]
    default = getattr(bsd, recipe).default_m
    assert m.default == argparse.SUPPRESS and f"default {default}:" in m.help  # absent unless given
    assert default == (20 if recipe in ("DPMPM", "DPAreal") else 5)
