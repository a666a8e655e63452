"""One value per default: a command given only its required options builds exactly the library's default
recipe, and its help states the library's values."""

from __future__ import annotations

import re

import pandas as pd
import pytest

import bayessdc as bsd
from bayessdc.cli import main


# not an Exception: main() turns every Exception into exit 1 (issue 48); a test's stop passes
class _Stop(BaseException):
    pass


def _recipe_of(argv, monkeypatch, tmp_path):
    """The recipe and m the command hands to bsd.synthesize."""
    pd.DataFrame({"a": [1, 2], "b": [1, 2]}).to_csv(tmp_path / "data.csv", index=False)
    seen = {}

    def fake(frame, recipe, **options):
        seen.update(recipe=recipe, m=options.get("m"))
        raise _Stop

    monkeypatch.setattr(bsd, "synthesize", fake)
    with pytest.raises(_Stop):
        main([argv[0], "--data", str(tmp_path / "data.csv"), "--out", str(tmp_path / "out"), *argv[1:]])
    return seen


def _flows():
    from bayessdc.models.flows import FlowColumns

    return bsd.Flows(columns=FlowColumns("origin", "destination", "origin_group", "destination_group", "count"))


CASES = {
    "dpmpm": (["dpmpm", "--synthesize", "b", "--keep", "a"], lambda: bsd.DPMPM()),
    "dp-areal": (["dp-areal", "--synthesize", "b", "--keep", "a"], lambda: bsd.DPAreal()),
    "cart": (["cart", "--synthesize", "b", "--keep", "a"], lambda: bsd.CART()),
    "spatial": (["spatial", "--response", "b", "--coords", "a,b"],
                lambda: bsd.Spatial(response="b", coords=("a", "b"), covariates=[])),
    "flows": (["flows"], _flows),
}  # fmt: skip


@pytest.mark.parametrize("command", sorted(CASES))
def test_a_command_with_no_options_builds_the_library_default_recipe(command, monkeypatch, tmp_path):
    argv, default = CASES[command]
    seen = _recipe_of(argv, monkeypatch, tmp_path)
    recipe, expected = seen["recipe"], default()
    def value(x):
        return list(x) if isinstance(x, list | tuple) else x

    differ = {f: (v, getattr(recipe, f)) for f, v in vars(expected).items() if value(getattr(recipe, f)) != value(v)}
    assert not differ, differ
    assert seen["m"] is None  # the recipe's default_m


def test_the_help_states_the_library_defaults(capsys):
    """Every '(default N)' of a flag that sets a recipe or settings field is that field's default."""
    recipes = {"dpmpm": bsd.DPMPM(), "dp-areal": bsd.DPAreal(), "cart": bsd.CART()}
    fields = {
        "--K": "K", "--draws": "settings.draws", "--chains": "settings.chains", "--thin": "settings.thin",
        "--burn": "settings.burn", "--tune": "settings.tune", "--min-leaf": "min_leaf", "--bootstrap": "bootstrap",
        "--repetitions": "repetitions", "--risk-records": "risk_records", "--risk-draws": "risk_draws",
        "--max-levels": "max_levels", "--target-accept": "settings.target_accept", "--max-chains": "gate.max_chains",
        "--gate-datasets": "gate.datasets_per_chain",
    }  # fmt: skip
    checked = 0
    for command, recipe in recipes.items():
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        for flag, field in fields.items():
            found = re.search(re.escape(flag) + r" \S+ [^()]*\(default ([0-9.]+)", text)
            owner, name = (getattr(recipe, field.split(".")[0], None), field.split(".")[1]) if "." in field else (
                recipe, field)  # fmt: skip
            if found is None or not hasattr(owner, name):
                continue
            assert float(found.group(1)) == float(getattr(owner, name)), (command, flag)
            checked += 1
    assert checked >= 12
