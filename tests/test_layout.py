"""The package's shape: the public face, and dependencies that point down (../shared/DESIGN.md)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import bayessdc as bsd
from bayessdc.cli import main

ROOT = Path(__file__).resolve().parents[1]
GENERIC_MODEL_MODULES = {"bayessdc.models.base", "bayessdc.models.sampling"}


def _imports(path: Path) -> set[str]:
    """Every absolute module a Python file imports (relative imports resolved against its package)."""
    tree = ast.parse(path.read_text())
    package = "bayessdc." + ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                found.add(f"{base}.{node.module}" if node.module else base)
            else:
                found.add(node.module)
    return found


def _python_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("folder", ["synthesis", "risk", "report"])
def test_generic_layers_import_no_specific_model(folder):
    offending = {
        str(path.relative_to(ROOT)): sorted(m for m in _imports(path) if m.startswith("bayessdc.models"))
        for path in _python_files(folder)
    }
    offending = {k: [m for m in v if m not in GENERIC_MODEL_MODULES] for k, v in offending.items()}
    assert not {k: v for k, v in offending.items() if v}


def test_synthesis_never_imports_risk():
    offending = [str(p.relative_to(ROOT)) for p in _python_files("synthesis") if any(
        m.startswith("bayessdc.risk") for m in _imports(p))]  # fmt: skip
    assert not offending


#: The one module above models/ that models/ may import: the named random streams (DESIGN.md: "Randomness: one
#: seed per run, split into named streams in one place"), a leaf that imports nothing from bayessdc.
STREAMS = "bayessdc.synthesis.streams"


def test_models_import_no_layer_above_them():
    above = ("bayessdc.synthesis", "bayessdc.risk", "bayessdc.cli", "bayessdc.pipeline", "bayessdc.release")
    offending = {
        str(p.relative_to(ROOT)): sorted(m for m in _imports(p) if m.startswith(above) and m != STREAMS)
        for p in _python_files("models")
    }
    assert not {k: v for k, v in offending.items() if v}


def test_the_streams_module_models_may_import_is_a_leaf():
    assert not {m for m in _imports(ROOT / "synthesis" / "streams.py") if m.startswith("bayessdc")}
    assert (ROOT / "synthesis" / "__init__.py").read_text().strip() == '"""bayessdc.synthesis."""'


def test_notebooks_and_benches_use_the_public_api_only():
    pattern = re.compile(r"(bayessdc\.cli\b|from bayessdc[\w.]* import [^\n]*\b_[a-z]\w*|bayessdc[\w.]*\._[a-z]\w*)")
    for path in sorted(ROOT.glob("bench/*.py")):
        assert not pattern.findall(path.read_text()), path.name
    for path in sorted(ROOT.glob("notebooks/*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        assert "import bayessdc as bsd" in code, path.name
        assert not pattern.findall(code), path.name


def test_each_cli_module_only_wires():
    for path in _python_files("cli"):
        assert len(path.read_text().splitlines()) < 200, path.name


def test_version_is_the_installed_one(capsys):
    assert bsd.__version__ == version("bayessdc")
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.strip() == f"bayessdc {version('bayessdc')}"


def test_import_bayessdc_is_light_until_a_synthesizer_is_asked_for():
    heavy = "('pymc', 'pytensor', 'arviz', 'numba', 'bayessdc.models.sampling')"
    code = f"import sys, bayessdc; print(any(m in sys.modules for m in {heavy})); bayessdc.Flows; "
    code += "print('bayessdc.models.flows' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]


def test_every_public_name_resolves():
    for name in bsd.__all__:
        assert getattr(bsd, name) is not None, name


def test_the_report_knows_no_synthesizer():
    """The report lays out what a synthesizer's pipeline hands it; it imports no pipeline or model."""
    offending = {
        str(p.relative_to(ROOT)): sorted(
            m for m in _imports(p) if m.startswith(("bayessdc.pipeline", "bayessdc.models"))
        )
        for p in _python_files("report")
    }
    assert not {k: v for k, v in offending.items() if v}
