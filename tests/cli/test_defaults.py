"""One value per default (issue 50, item 4): the command line holds no default of a library parameter.

An option that sets a parameter of a recipe or of a verb is absent unless given (``argparse.SUPPRESS``): a command
given only its required options builds exactly the library's default recipe and passes no parameter of its own to
``bsd.synthesize``, ``bsd.adjust`` or ``bsd.evaluate``; the help states the default read from the dataclass field
or the signature; and no module of cli/ writes a number as the default of an option.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.cli import build_parser, main
from bayessdc.cli.options import library_default, shown

ROOT = Path(__file__).resolve().parents[2]

#: What a command may pass to the verb besides the options given: its input, roles and output, none a default.
WIRING = {"synthesize", "keep", "out", "policy", "holdout", "progress", "weights", "replicate_weights", "attacks"}


# not an Exception: main() turns every Exception into exit 1 (issue 48); a test's stop passes
class _Stop(BaseException):
    pass


def _call(argv, verb, monkeypatch, tmp_path, data="--data"):
    """The arguments the command hands to ``bsd.<verb>``."""
    pd.DataFrame({"a": [1, 2], "b": [1, 2]}).to_csv(tmp_path / "data.csv", index=False)
    seen = {}

    def fake(*args, **options):
        seen.update(args=args, options=options)
        raise _Stop

    monkeypatch.setattr(bsd, verb, fake)
    with pytest.raises(_Stop):
        main([argv[0], data, str(tmp_path / "data.csv"), "--out", str(tmp_path / "out"), *argv[1:]])
    return seen


CASES = {
    "dpmpm": (["dpmpm", "--synthesize", "b", "--keep", "a"], lambda: bsd.DPMPM()),
    "dp-areal": (["dp-areal", "--synthesize", "b", "--keep", "a"], lambda: bsd.DPAreal()),
    "cart": (["cart", "--synthesize", "b", "--keep", "a"], lambda: bsd.CART()),
    "spatial": (["spatial", "--response", "b", "--coords", "a,b"],
                lambda: bsd.Spatial(response="b", coords=("a", "b"))),
    "flows": (["flows"], lambda: bsd.Flows()),
}  # fmt: skip


@pytest.mark.parametrize("command", sorted(CASES))
def test_a_command_with_no_options_builds_the_library_default_recipe(command, monkeypatch, tmp_path):
    argv, default = CASES[command]
    seen = _call(argv, "synthesize", monkeypatch, tmp_path)
    recipe, expected = seen["args"][1], default()
    differ = {f.name: (getattr(expected, f.name), getattr(recipe, f.name)) for f in dataclasses.fields(expected)
              if getattr(recipe, f.name) != getattr(expected, f.name)}  # fmt: skip
    assert not differ, differ
    assert recipe == expected
    assert set(seen["options"]) <= WIRING, set(seen["options"]) - WIRING  # m, seed, ...: the verb's own


def test_options_given_change_those_fields_only(monkeypatch, tmp_path):
    argv = ["dpmpm", "--synthesize", "b", "--keep", "a", "--draws", "60", "--a-alpha", "2", "--max-chains", "9"]
    seen = _call([*argv, "--seed", "3", "--m", "2"], "synthesize", monkeypatch, tmp_path)
    default = bsd.DPMPM()
    expected = dataclasses.replace(
        default, settings=dataclasses.replace(default.settings, draws=60),
        priors=dataclasses.replace(default.priors, a_alpha=2.0), gate=dataclasses.replace(default.gate, max_chains=9),
    )  # fmt: skip
    assert seen["args"][1] == expected
    assert seen["options"]["seed"] == 3 and seen["options"]["m"] == 2


def test_cta_and_evaluate_pass_only_the_options_given(monkeypatch, tmp_path):
    seen = _call(["cta", "--dims", "a", "--value", "b"], "adjust", monkeypatch, tmp_path, data="--table")
    assert set(seen["options"]) == {"policy"}
    seen = _call(["cta", "--dims", "a", "--value", "b", "--capacity", "0.3", "--integer"], "adjust", monkeypatch,
                 tmp_path, data="--table")  # fmt: skip
    assert seen["options"] == {"policy": None, "settings": bsd.AdjustmentSettings(capacity=0.3, integer=True)}
    seen = _call(["cta", "--dims", "a", "--value", "b", "--objective", "compromise", "--time-limit", "5", "--kind",
                  "count"], "adjust", monkeypatch, tmp_path, data="--table")  # fmt: skip
    assert seen["options"] == {"policy": None, "kind": "count", "solver": bsd.SolverSettings(time_limit=5.0),
                               "settings": bsd.AdjustmentSettings(objective="compromise")}  # fmt: skip
    seen = _call(["evaluate", "--synthetic", str(tmp_path / "data.csv")], "evaluate", monkeypatch, tmp_path,
                 data="--original")  # fmt: skip
    assert set(seen["options"]) <= WIRING


def _library_options():
    """``(command, action)`` of every option that sets a library parameter."""
    parser = build_parser()
    for group in parser._subparsers._group_actions:
        for command, sub in group.choices.items():
            for action in sub._actions:
                if hasattr(action, "shows"):
                    yield command, action


def _parameters(owner):
    if dataclasses.is_dataclass(owner):
        return {f.name for f in dataclasses.fields(owner)}
    return set(inspect.signature(owner).parameters)


def test_every_option_names_a_parameter_and_its_help_the_library_default():
    """Each option's destination is a field or parameter of a public name of bsd; each default its help states
    is the library's, read when the help is read."""
    checked = 0
    for command, action in _library_options():
        owner, first, *_ = action.dest.split(".")
        assert action.default is None or action.default == "==SUPPRESS==", (command, action.dest)
        assert first in _parameters(getattr(bsd, owner)), (command, action.dest)
        template = action.__dict__["_help"]
        for key, path in action.shows.items():
            if f"{{{key}}}" in template:
                assert action.show(library_default(path)) in action.help, (command, action.dest)
                checked += 1
    assert checked >= 60


def test_the_help_states_the_values_of_the_library(capsys):
    with pytest.raises(SystemExit):
        main(["dpmpm", "--help"])
    text = " ".join(capsys.readouterr().out.split("options:", 1)[1].split())
    recipe = bsd.DPMPM()
    for flag, value in {"--K": recipe.K, "--draws": recipe.settings.draws, "--chains": recipe.settings.chains,
                        "--gate-datasets": recipe.gate.datasets_per_chain, "--m": bsd.DPMPM.default_m}.items():
        assert f"(default {shown(value)}" in text.split(f"{flag} ", 1)[1].split(" --", 1)[0], flag  # fmt: skip


#: Number defaults left in cli/, each with its reason: none of them a parameter of the library.
OWN_DEFAULTS = {("demo.py", "--seed"): "the seed bayessdc demo hands to each example's demo(out, seed)"}


def test_no_module_of_the_command_line_holds_a_number_as_a_default():
    found = []
    for path in sorted((ROOT / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if called not in ("add_argument", "option", "set_defaults"):
                continue
            flag = next((a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)), "")
            for keyword in node.keywords:
                if keyword.arg != "default" and called != "set_defaults":
                    continue
                value = keyword.value.operand if isinstance(keyword.value, ast.UnaryOp) else keyword.value
                if isinstance(value, ast.Constant) and type(value.value) in (int, float):
                    if (path.name, flag) not in OWN_DEFAULTS:
                        found.append(f"{path.name}: {flag} {keyword.arg}={ast.unparse(keyword.value)}")
    assert not found, found
