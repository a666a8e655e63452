"""Named random streams (``bayessdc.synthesis.streams``): their properties, and that the library draws from them.

The scan at the end reads every Python file of the library and fails on randomness derived by hand:
``SeedSequence(...)``, ``default_rng(...)``, ``np.random.seed(...)`` (numba's hidden per-thread state) or a
silenced legacy-API warning (``noqa: NPY002``) outside ``synthesis/streams.py`` and the files allowed below.
"""

from __future__ import annotations

import ast
import re
import zlib
from pathlib import Path

import numpy as np
import pytest

from bayessdc.synthesis.datasets import group_seed
from bayessdc.synthesis.streams import integer_seed, name_word, rng, stream

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ("models", "synthesis", "risk", "measures", "api", "cta", "report", "cli")


def _state(sequence: np.random.SeedSequence) -> list[int]:
    return sequence.generate_state(4).tolist()


# -- properties ---------------------------------------------------------------------------------------------


def test_the_same_names_give_the_same_stream_and_different_names_different_ones():
    assert _state(stream(11, "chain", 2)) == _state(stream(11, "chain", 2))
    assert rng(11, "datasets").random(5).tolist() == rng(11, "datasets").random(5).tolist()
    streams = [
        stream(11, "chain", 0), stream(11, "chain", 1), stream(11, "chain"), stream(12, "chain", 0),
        stream(11, "datasets"), stream(11, "inherent", "minimum"), stream(11, "inherent", "maximum"),
        stream(11, "cart-dataset", 1), stream(11, "cart-dataset", 1, 0), stream(11, 0), stream(11, "0"),
    ]  # fmt: skip
    states = {tuple(_state(s)) for s in streams}
    assert len(states) == len(streams)


def test_a_stream_does_not_depend_on_the_order_parts_ask_for_theirs():
    """Parts run in any order (threads, a cluster, resumed runs): each part's numbers depend on its names only."""
    names = [("fit",), ("chain", 0), ("chain", 1), ("datasets",), ("inherent", "minimum"), ("tables-bootstrap",)]
    forward = {n: rng(5, *n).random(3).tolist() for n in names}
    backward = {n: rng(5, *n).random(3).tolist() for n in reversed(names)}
    interleaved = {}
    generators = {n: rng(5, *n) for n in reversed(names)}
    for n in names:  # drawn from one generator after another was created and used
        interleaved[n] = generators[n].random(3).tolist()
    assert forward == backward == interleaved


def test_names_nest_like_spawned_children_and_a_trailing_zero_counts():
    parent = stream(3, "chain")
    for k, child in enumerate(parent.spawn(3)):
        assert _state(child) == _state(stream(3, "chain", k))
    # the first name sits in the entropy pool, where a trailing 0 would vanish; the further ones do not
    assert _state(stream(3, "chain", 0)) != _state(stream(3, "chain"))
    assert _state(stream(3, "a", 0, 0)) != _state(stream(3, "a", 0))


def test_one_name_is_the_former_group_seed():
    """``stream(seed, name)`` keeps the values of ``group_seed`` (``SeedSequence([seed, crc32(name)])``)."""
    for seed, name in ((0, "A"), (7, "state-06-to-13"), (2**40 + 3, "group é")):
        legacy = np.random.SeedSequence([seed, zlib.crc32(name.encode("utf-8"))])
        assert _state(stream(seed, name)) == _state(legacy) == _state(group_seed(seed, name))


def test_the_scheme_is_pinned():
    """These numbers change only if the scheme does (then every release digest changes with them)."""
    assert name_word("fit") == zlib.crc32(b"fit") == 1347160907
    assert integer_seed(0, "fit") == integer_seed(0, "fit")
    assert [integer_seed(0, "fit"), integer_seed(1, "chain", 0), integer_seed(1, "chain", 1)] == PINNED


PINNED = [4064844019, 2157151553, 1425425091]


def test_the_examples_in_the_docstrings_hold():
    import doctest

    import bayessdc.synthesis.streams as module

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 8 and result.failed == 0


def test_integer_seeds_fit_32_bits_and_names_are_checked():
    values = [integer_seed(s, "tree") for s in range(200)]
    assert all(isinstance(v, int) and 0 <= v < 2**32 for v in values) and len(set(values)) == 200
    assert name_word(np.int64(4)) == 4
    with pytest.raises(TypeError, match="at least one name"):
        stream(1)
    for bad in (True, -1, 1.5, None, b"fit"):
        with pytest.raises(TypeError, match="string or a non-negative integer"):
            stream(1, "chain", bad)
    with pytest.raises(ValueError, match="non-negative integer"):
        stream(-1, "fit")


# -- the library draws from named streams only ----------------------------------------------------------------

#: Files (or folders, ending in "/") of the library allowed to seed by hand, each with its reason.
ALLOWED: dict[str, str] = {
    "synthesis/streams.py": "the one place that builds seed sequences and generators",
    # simulators of test and example data keep their own seeding: their seed is the documented input of a
    # simulated dataset (simulate_ce_like(seed=1) is the data of the anchors and benches), not a run's stream
    "models/cart/simulate.py": "simulator of example data, np.random.default_rng(seed)",
    "models/dp_areal/simulate.py": "simulator of example data, np.random.default_rng(seed)",
    "models/dpmpm/simulate.py": "simulator of example data, np.random.default_rng(seed)",
    "models/flows/simulate.py": "simulator of example data, np.random.default_rng(seed)",
    "models/households.py": "simulator of example data (persons in households), np.random.default_rng(seed)",
    "models/spatial/simulate.py": "simulator of example data, np.random.default_rng(seed)",
}

_HAND_SEEDING = re.compile(r"noqa:[^\n]*NPY002")


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def hand_seeding(source: str) -> list[tuple[int, str]]:
    """Lines of ``source`` that derive randomness by hand: calls of ``SeedSequence``, ``default_rng`` or
    ``numpy.random.seed`` (under any import alias of numpy or numpy.random), and legacy-API warnings silenced."""
    tree = ast.parse(source)
    aliases = {}  # local name -> what it was imported as (np -> numpy, npr -> numpy.random, seed -> numpy.random.seed)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update({a.asname or a.name: a.name for a in node.names})
        elif isinstance(node, ast.ImportFrom) and node.module:
            aliases.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            head, _, rest = name.partition(".")
            resolved = ".".join(filter(None, [aliases.get(head, head), rest]))
            last = resolved.rsplit(".", 1)[-1]
            if last in ("SeedSequence", "default_rng") or resolved == "numpy.random.seed":
                found.append((node.lineno, f"{name}(...)"))
    for number, line in enumerate(source.splitlines(), start=1):
        if _HAND_SEEDING.search(line):
            found.append((number, "noqa: NPY002 (numba's or numpy's hidden global state)"))
    return sorted(found)


def _library_files() -> list[Path]:
    return sorted(p for folder in LIBRARY for p in (ROOT / folder).rglob("*.py"))


def _allowed(relative: str) -> str | None:
    for entry in ALLOWED:
        if relative == entry or (entry.endswith("/") and relative.startswith(entry)):
            return entry
    return None


def test_the_scan_sees_every_form_of_hand_seeding():
    source = (
        "import numpy as np\nimport numpy.random as npr\nfrom numpy.random import SeedSequence, default_rng\n"
        "a = np.random.default_rng(np.random.SeedSequence([1, 3]))\nb = SeedSequence(4)\nc = default_rng(5)\n"
        "np.random.seed(6)\nnpr.seed(7)\nx = 1  # noqa: NPY002\n"
        "'np.random.seed(8) in a string is no call'\nd = rng(seed, 'fit')\n"
    )
    assert [line for line, _ in hand_seeding(source)] == [4, 4, 5, 6, 7, 8, 9]


def test_the_library_draws_only_from_named_streams():
    offending = {}
    used = set()
    for path in _library_files():
        relative = str(path.relative_to(ROOT))
        found = hand_seeding(path.read_text())
        if not found:
            continue
        entry = _allowed(relative)
        if entry is None:
            offending[relative] = found
        else:
            used.add(entry)
    assert not offending, (
        "derive randomness from bayessdc.synthesis.streams (stream, rng, integer_seed) and pass generators into "
        f"numba kernels: {offending}"
    )
    assert not set(ALLOWED) - used, f"allowed but no longer needed, remove from ALLOWED: {set(ALLOWED) - used}"


# -- every stream name is listed, once ------------------------------------------------------------------------

_STREAM_CALLS = ("stream", "rng", "integer_seed")


def stream_names(source: str) -> list[tuple[int, str]]:
    """``(line, name)`` of every name given to a stream in ``source``: the arguments after the seed of
    ``streams.stream``, ``streams.rng`` and ``streams.integer_seed`` (under any import of the module or its
    functions) that are string literals (the literal) or members of ``Stream`` (``"Stream.<member>"``); names held
    in variables (indices, a group's or an attack's name) are left out."""
    tree = ast.parse(source)
    functions, modules = set(), {"streams"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("streams"):
            functions.update(a.asname or a.name for a in node.names if a.name in _STREAM_CALLS)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("synthesis"):
            modules.update(a.asname or a.name for a in node.names if a.name == "streams")
        elif isinstance(node, ast.Import):
            modules.update(a.asname or a.name for a in node.names if a.name.endswith(".streams"))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        head, _, last = _dotted(node.func).rpartition(".")
        if not ((head in modules and last in _STREAM_CALLS) or (not head and last in functions)):
            continue
        for arg in node.args[1:]:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append((node.lineno, arg.value))
            elif _dotted(arg).startswith("Stream."):
                found.append((node.lineno, _dotted(arg)))
    return found


def test_the_name_scan_sees_every_form_of_naming_a_stream():
    source = (
        "import bayessdc.synthesis.streams as streams\nfrom bayessdc.synthesis.streams import Stream, rng as r\n"
        "from bayessdc.synthesis import streams as s\n"
        "a = streams.rng(seed, 'fit', 3)\nb = r(seed, Stream.CHAIN, c)\nc = s.integer_seed(seed, name, 'assess')\n"
        "d = other.rng(seed, 'not-a-stream')\n"
    )
    assert stream_names(source) == [(4, "fit"), (5, "Stream.CHAIN"), (6, "assess")]


def test_every_stream_name_used_is_listed_once_in_stream():
    """Every stream name the library gives is a member of ``Stream`` (or its value, where a module not ours to
    edit still spells it: api/pipeline), and every member is used (given to a stream, or held in a variable that
    is: the inherent scenarios' names); no two members share a spelling; "chain" and "chains" are two streams, each
    spelled once."""
    from bayessdc.synthesis.streams import Stream

    assert len(Stream.__members__) == len(Stream) == len({m.value for m in Stream})  # no aliases, no repeats
    assert Stream.CHAIN == "chain" and Stream.CHAINS == "chains"  # the spellings the seeds were derived from
    values = {m.value for m in Stream}
    unlisted, used = {}, set()
    for path in _library_files():
        source = path.read_text()
        members = {(n.lineno, _dotted(n)) for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute)}
        named = set(stream_names(source)) | {(line, name) for line, name in members if name.startswith("Stream.")}
        for line, name in sorted(named):
            if name.startswith("Stream."):
                member = name.removeprefix("Stream.")
                ok = member in Stream.__members__
                used.add(Stream.__members__[member].value if ok else None)
            else:
                ok = name in values
                used.add(name)
            if not ok:
                unlisted.setdefault(str(path.relative_to(ROOT)), []).append((line, name))
    assert not unlisted, f"name these streams by members of bayessdc.synthesis.streams.Stream: {unlisted}"
    assert values <= used, f"listed but never used: {sorted(values - used)}"
