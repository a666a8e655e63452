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
# models.errors holds InputError, the user-input error of every layer (no model in it)
# models.progress holds the progress bars and the logger of every layer (public as bayessdc.progress)
GENERIC_MODEL_MODULES = {
    "bayessdc.models.base",
    "bayessdc.models.sampling",
    "bayessdc.models.errors",
    "bayessdc.models.progress",
}


def _module(path: Path) -> str:
    """The module a file of the package is (api/ is ``bayessdc``, another folder ``bayessdc.<folder>``)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    names = (["bayessdc"] if parts[0] == "api" else ["bayessdc", parts[0]]) + parts[1:]
    return ".".join(names[:-1] if names[-1] == "__init__" else names)


def _imported(path: Path) -> list[tuple[str, list[str]]]:
    """Every import of a file, function-level and ``TYPE_CHECKING`` ones included: (module, names imported from
    it), relative imports resolved."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            found.append((target, [alias.name for alias in node.names]))
    return found


def _imports(path: Path) -> set[str]:
    """Every absolute module a Python file imports (relative imports resolved against its package)."""
    return {module for module, _ in _imported(path)}


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
    above = ("bayessdc.synthesis", "bayessdc.risk", "bayessdc.cli", "bayessdc.pipeline", "bayessdc.recipes",
             "bayessdc.release")
    offending = {
        str(p.relative_to(ROOT)): sorted(m for m in _imports(p) if m.startswith(above) and m != STREAMS)
        for p in _python_files("models")
    }
    assert not {k: v for k, v in offending.items() if v}


def test_the_streams_module_models_may_import_is_a_leaf():
    assert not {m for m in _imports(ROOT / "synthesis" / "streams.py") if m.startswith("bayessdc")}
    assert (ROOT / "synthesis" / "__init__.py").read_text().strip() == '"""bayessdc.synthesis."""'


def _imported_names(path: Path) -> set[str]:
    """Like :func:`_imports`, with ``from package import name`` read as ``package.name`` too (a submodule, or a name
    of the package: ``from bayessdc import progress`` imports ``bayessdc.progress``)."""
    found = set()
    for module, names in _imported(path):
        if not names or module != "bayessdc":  # ``from bayessdc import x`` imports x, not the top package's face
            found.add(module)
        found.update(f"{module}.{name}" for name in names)
    return found


#: The top package's own modules (api/: the public verbs, the Release, the pipeline, the policy, progress's public
#: name), which no layer below it imports.
TOP_MODULES = tuple(
    sorted({f"bayessdc.{p.stem}" for p in (ROOT / "api").glob("*.py") if p.stem != "__init__"}
           | {f"bayessdc.{p.name}" for p in (ROOT / "api").iterdir() if (p / "__init__.py").exists()})
)  # fmt: skip
#: The one import from below into the top package, and why: a measure's results rendered as an HTML table
#: (``Measure._repr_html_``), imported when called, by a file that is not ours to move (measures/base.py).
TOP_IMPORTS_ALLOWED = {"measures/base.py": {"bayessdc.display"}}


@pytest.mark.parametrize("folder", ["models", "risk", "synthesis", "measures"])
def test_the_layers_below_the_top_package_never_import_it(folder):
    """models/, risk/, synthesis/ and measures/ import downward only: never ``bayessdc.progress`` (its
    implementation is :mod:`bayessdc.models.progress`), ``bayessdc.pipeline``, ``bayessdc.policy``,
    ``bayessdc.release`` or any other module of the top package, nor the top package itself (``import bayessdc``)."""
    assert {"bayessdc.progress", "bayessdc.pipeline", "bayessdc.policy", "bayessdc.release"} <= set(TOP_MODULES)
    offending = {}
    for path in _python_files(folder):
        name = str(path.relative_to(ROOT))
        found = {".".join(m.split(".")[:2]) for m in _imported_names(path)}
        found = {m for m in found if m == "bayessdc" or m in TOP_MODULES}
        found -= TOP_IMPORTS_ALLOWED.get(name, set())
        if found:
            offending[name] = sorted(found)
    assert not offending


def _layer_imports(code: str) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of every ``from bayessdc.<layer> import ...`` in ``code``."""
    found = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bayessdc."):
            found.append((node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((a.name, []) for a in node.names if a.name.startswith("bayessdc."))
    return found


def _documented(module: str, names: list[str]) -> list[str]:
    """The names that are not part of ``module``'s documented interface (its ``__all__``, or submodules)."""
    import importlib
    import importlib.util

    target = importlib.import_module(module)
    public = set(getattr(target, "__all__", ()))
    package = hasattr(target, "__path__")
    submodules = {n for n in names if package and importlib.util.find_spec(f"{module}.{n}") is not None}
    return [n for n in names if n not in public and n not in submodules]


def test_notebooks_and_benches_use_the_public_api_only():
    """DESIGN.md: notebooks use ``import bayessdc as bsd`` and the documented layers only (each name in its
    module's ``__all__``, never the command line or a private name); a bench that reaches below ``bsd`` says why
    at its top (``Below the public API: ...``)."""
    pattern = re.compile(r"(bayessdc\.cli\b|from bayessdc[\w.]* import [^\n]*\b_[a-z]\w*|bayessdc[\w.]*\._[a-z]\w*)")
    for path in sorted(ROOT.glob("bench/*.py")):
        text = path.read_text()
        assert not pattern.findall(text), path.name
        below = _layer_imports(text)
        for module, names in below:
            assert not _documented(module, names), (path.name, module, _documented(module, names))
        assert not below or "Below the public API: " in (ast.get_docstring(ast.parse(text)) or ""), path.name
    for path in sorted(ROOT.glob("notebooks/*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))
        assert "import bayessdc as bsd" in code, path.name
        assert not pattern.findall(code), path.name
        for module, names in _layer_imports(code):
            assert not _documented(module, names), (path.name, module, _documented(module, names))


def test_each_cli_module_only_wires():
    for path in _python_files("cli"):
        assert len(path.read_text().splitlines()) < 200, path.name


def test_the_command_line_names_no_synthesizer():
    """Issue 50: a synthesizer's subcommand is built from the command its recipe package declares; no module of
    cli/ reaches a recipe class (``bsd.DPMPM``), a recipe's module or a recipe's field (``"DPMPM.K"``)."""
    from bayessdc.recipes import RECIPES

    found = []
    for path in _python_files("cli"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in RECIPES:
                found.append(f"{path.name}: .{node.attr}")
            if isinstance(node, ast.Call) and any(k.arg == "to" for k in node.keywords):
                found += [f"{path.name}: to={ast.unparse(k.value)}" for k in node.keywords if k.arg == "to"
                          and isinstance(k.value, ast.Constant) and str(k.value.value).split(".")[0] in RECIPES]
        found += [f"{path.name}: import {m}" for m, _ in _imported(path) if _recipe_of(m) is not None]
    assert not found, found


def test_recipes_and_the_pipeline_hold_no_string_keyed_state():
    """A recipe's prepared input and fit are typed dataclasses, never a dictionary read by string keys
    (``extra[...]``, ``state[...]``)."""
    for path in _python_files("api/pipeline") + _python_files("api/recipes"):
        assert not re.search(r"\b(extra|state)\[[\"']", path.read_text()), path.name


def _recipe_of(module: str) -> str | None:
    """The recipe package a module belongs to (``bayessdc.recipes.cart.measures``: ``cart``)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "recipes" else None


def test_the_pipeline_imports_no_recipe():
    """api/pipeline holds the generic steps: it knows recipes only through :class:`bayessdc.pipeline.Recipe`."""
    offending = {str(p.relative_to(ROOT)): [m for m, _ in _imported(p) if m.startswith("bayessdc.recipes")]
                 for p in _python_files("api/pipeline")}  # fmt: skip
    assert not {k: v for k, v in offending.items() if v}


def test_a_recipe_imports_no_other_recipe_but_its_base():
    """Each synthesizer has one home, api/recipes/<name>/: its modules import another recipe's only when that
    recipe is its base class's home (the DPMPM and the DP-areal on the categorical recipe), and the registry
    :data:`bayessdc.recipes.RECIPES` lists each public recipe class once."""
    from bayessdc.recipes import RECIPES

    bases: dict[str, set[str]] = {}
    for name, module in RECIPES.items():
        own = _recipe_of(module)
        assert _recipe_of(getattr(bsd, name).__module__) == own, name
        bases[own] = {_recipe_of(c.__module__) for c in getattr(bsd, name).__mro__} - {None, own}
    assert bases["dpmpm"] == bases["dp_areal"] == {"categorical"}
    offending = {}
    for path in _python_files("api/recipes"):
        own = _recipe_of(_module(path))
        if own is None:
            continue
        others = {_recipe_of(m) for m, _ in _imported(path)} - {None, own} - bases.get(own, set())
        if others:
            offending[str(path.relative_to(ROOT))] = sorted(others)
    assert not offending


def test_no_module_of_the_public_layer_imports_another_modules_private_name():
    """``from .x import _name`` across modules of api/ (recipes, pipeline and the rest): a name another module
    needs is public there."""
    offending = []
    for path in _python_files("api"):
        for module, names in _imported(path):
            if module.startswith("bayessdc") and module != _module(path):
                offending += [f"{path.relative_to(ROOT)}: {module}.{n}" for n in names
                              if n.startswith("_") and not n.startswith("__")]  # fmt: skip
    assert not offending


def test_no_import_circle_in_the_public_layer():
    """No circle among the modules of api/ (``bayessdc``, its pipeline and recipes), counting every import,
    function-level and ``TYPE_CHECKING`` ones included: a module that needs another's names at run time or for its
    types sits below it."""
    modules = {_module(p): p for p in _python_files("api")}
    graph = {name: {m for m, names in _imported(path) for m in [m, *(f"{m}.{n}" for n in names)] if m in modules
                    and m != name} for name, path in modules.items()}  # fmt: skip
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert not circles


def test_models_base_declares_what_generic_code_calls_on_a_synthesizer():
    """Every method generic code (synthesis/, risk/, measures/, the pipeline's default steps) calls on a
    synthesizer is declared by a protocol of models/base.py."""
    from bayessdc.models import base

    declared = set()
    for name in dir(base):
        protocol = getattr(base, name)
        if isinstance(protocol, type) and getattr(protocol, "_is_protocol", False):
            declared.update(k for k in vars(protocol) if not k.startswith("_"))
            declared.update(getattr(protocol, "__annotations__", {}))
    called = set()
    files = [*_python_files("synthesis"), *_python_files("risk"), *_python_files("measures"),
             ROOT / "api" / "pipeline" / "recipe.py"]  # fmt: skip
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "synthesizer":
                called.add(node.attr)
    assert called and called <= declared, sorted(called - declared)


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
            m for m in _imports(p) if m.startswith(("bayessdc.pipeline", "bayessdc.recipes", "bayessdc.models"))
        )
        for p in _python_files("report")
    }
    assert not {k: v for k, v in offending.items() if v}


def test_the_command_line_reaches_the_library_through_its_public_names():
    """cli/ imports no model (``bayessdc.models``) and no pipeline module (``bayessdc.pipeline``): recipes, settings,
    simulators and errors through ``import bayessdc as bsd``, so that either can be moved without the CLI."""
    below = ("bayessdc.models", "bayessdc.pipeline")
    offending = {str(p.relative_to(ROOT)): sorted(m for m in _imports(p) if m.startswith(below))
                 for p in _python_files("cli")}  # fmt: skip
    assert not {k: v for k, v in offending.items() if v}
