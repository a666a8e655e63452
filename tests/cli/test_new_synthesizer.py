"""Issue 50's acceptance: a new synthesizer touches its model folder, its recipe package and one line of
``bayessdc.recipes.RECIPES``. A package written here (a Beta-Bernoulli model, its recipe and its command), added to
the registry by one line, becomes ``bsd.Toy``, ``bayessdc toy`` with its help and flags, and a demo of
``bayessdc demo``, with no file of the library touched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]

RECIPE = '''
from dataclasses import dataclass

from bayessdc.pipeline import Prepared, Recipe
from bayessdc.synthesis.output import fingerprint_frame

from tests.pipeline.test_toy_synthesizer import BetaBernoulli  # the model: smokers by group, Beta(a, b) prior


@dataclass
class Toy(Recipe):
    a: float = 1.0
    b: float = 1.0
    name = "beta_bernoulli"

    def prepare(self, frame, synthesize, keep, seed=0):
        data = frame[["group", "smoker"]].reset_index(drop=True)
        return Prepared(data, {"synthesizer": self.name, "input": fingerprint_frame(data)})

    def synthesizer(self):
        return BetaBernoulli(a=self.a, b=self.b)
'''

COMMAND = '''
from pathlib import Path

from bayessdc.command import Command, Option, synthesize_options


def summary(release):
    return [f"toy: {release.m} datasets, prior a={release.description['priors']['a']:g}"]


def demo(out, seed):
    import bayessdc as bsd
    import pandas as pd

    frame = pd.DataFrame({"group": ["x", "y"] * 100, "smoker": [0, 1, 1, 0] * 50})
    release = bsd.synthesize(frame, bsd.Toy(), m=2, seed=seed, out=Path(out) / "toy", progress=False)
    return [("datasets", release.m)]


COMMAND = Command(
    name="toy", recipe="Toy", help="a Beta-Bernoulli synthesizer",
    description="smokers by group, drawn from Beta(a, b)",
    options=(Option("Toy.a", "first shape of the prior (default {default})", type=float),
             Option("Toy.b", "second shape of the prior (default {default})", type=float, flag="prior-b"),
             *synthesize_options("Toy")),
    summary=summary, demo=demo,
)
'''

#: Registers the package by the one line a new synthesizer adds to bayessdc.recipes.RECIPES, then runs the command.
MAIN = """
import sys
import bayessdc.recipes
bayessdc.recipes.RECIPES["Toy"] = "toy_synth"
from bayessdc.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _bayessdc(tmp_path, *args):
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-c", MAIN, *args], capture_output=True, text=True, env=env, timeout=600)


def test_a_package_and_one_registration_line_make_a_command_with_its_help_flags_and_demo(tmp_path):
    package = tmp_path / "toy_synth"
    package.mkdir()
    (package / "__init__.py").write_text("from .recipe import Toy\n")
    (package / "recipe.py").write_text(textwrap.dedent(RECIPE))
    (package / "command.py").write_text(textwrap.dedent(COMMAND))
    rng = np.random.default_rng(2)
    pd.DataFrame({"group": rng.choice(["a", "b"], 400), "smoker": rng.integers(0, 2, 400)}).to_csv(
        tmp_path / "persons.csv", index=False
    )

    shown = _bayessdc(tmp_path, "toy", "--help")
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "--a A first shape of the prior (default 1)" in text
    assert "--prior-b PRIOR_B second shape of the prior (default 1)" in text
    assert "--m M synthetic datasets (default 5" in text  # the Recipe base's default_m, read from the class

    run = _bayessdc(tmp_path, "toy", "--data", str(tmp_path / "persons.csv"), "--out", str(tmp_path / "out"),
                    "--a", "3", "--prior-b", "7", "--m", "2", "--seed", "4", "--quiet")  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "toy: 2 datasets, prior a=3" in run.stdout
    model = json.loads((tmp_path / "out" / "release" / "model.json").read_text())
    assert model["priors"] == {"a": 3.0, "b": 7.0}  # the flags reached the recipe's fields

    demo = _bayessdc(tmp_path, "demo", "--only", "toy", "--out", str(tmp_path / "demo"))
    assert demo.returncode == 0, demo.stderr
    assert any(line.split()[:3] == ["toy", "datasets", "2"] for line in demo.stdout.splitlines()), demo.stdout
