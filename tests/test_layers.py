"""The house by stage, kept true: each stage imports only the stages README's table lets
it, no module imports itself round a cycle, and probe/'s rooms stand on at most 8 floors.
Read from the source with `ast` (nothing is imported), so it holds for the imports a type
checker follows (`if TYPE_CHECKING:`) and, where said, for lazy imports inside functions."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "evalkit"
README = PACKAGE.parent / "README.md"

#: what each stage may import besides itself and the leaf modules (errors, records,
#: sanitize, fmt, ...): README's table says the same ("may import"; the CLI and the demo
#: may import every stage). Order is not the rule: the pure core (analysis) and the inputs
#: read before a probe (questionnaire, corpus, workload) sit below every stage, so the
#: probe and the run directory use them though they come first. The catalog is an edge
#: like rundir (SQLite, files): it indexes runs, may start a panel sample (probe) and pool
#: it (analysis), and only the CLI reads it into a review or a PDF; the corpus keeps its
#: folder beside the catalog's; verification may use every stage but the prober's.
MAY_IMPORT = {
    "probe": {"rundir", "analysis", "questionnaire", "corpus", "workload", "reference",
              "voice"},
    "rundir": {"analysis", "questionnaire", "corpus", "workload", "voice"},
    "analysis": {"corpus", "workload", "voice"},
    "questionnaire": {"corpus"},
    "corpus": {"catalog"},
    "workload": {"questionnaire", "corpus"},
    "review": {"rundir", "analysis", "questionnaire", "corpus", "workload"},
    "render": {"rundir", "analysis", "questionnaire", "corpus", "workload", "review"},
    "verify": {"rundir", "analysis", "questionnaire", "corpus", "workload", "review",
               "render"},
    "catalog": {"probe", "rundir", "analysis", "questionnaire", "corpus", "workload"},
    "reference": {"corpus", "workload", "voice"},
    "voice": set(),
}
#: every stage, those free to import any other among them
STAGES = {*MAY_IMPORT, "cli", "demo"}
#: probe/'s rooms, one job each, and the rooms each may import (those below it); `suite`
#: beside them (`run_probe`) may import every room
PROBE_ROOMS: dict[str, set[str]] = {
    "wire": set(), "apis": set(), "plan": set(),
    "client": {"wire", "apis", "plan"},
    "load": {"wire", "apis", "plan", "client"},
    "run": {"wire", "apis", "plan", "client", "load"},
    "realtime": {"wire", "apis", "plan", "client"},
}
PROBE_TOP = {"suite"}
#: the most floors probe/'s import graph may stand on (issue 42: it stood on 11)
PROBE_FLOORS = 8


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, *, at_load: bool = False) -> Iterator[str]:
    """The evalkit modules a file imports (`from evalkit.x import y` names evalkit.x.y
    when y is a module): all of them, or (`at_load`) those outside functions, which run
    when the module loads or which a type checker follows (`if TYPE_CHECKING:`)."""
    tree = ast.parse(path.read_text())
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if at_load and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        todo.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("evalkit"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.startswith("evalkit"):
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                yield sub if sub in MODULES else node.module


MODULES = {module_name(p) for p in PACKAGE.rglob("*.py")}


def stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_the_stages_are_folders() -> None:
    """Each stage named here is a package, so the layout itself says what a run goes
    through."""
    for name in MAY_IMPORT:
        assert (PACKAGE / name / "__init__.py").is_file(), name


def test_readme_names_the_same_imports() -> None:
    """README's table of stages says what each may import, and says what this test holds
    the code to: a row's folder (`evalkit/x/`) and its last cell, the stages it may import
    ("every stage" for the CLI)."""
    said: dict[str, set[str]] = {}
    for line in README.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        folder = re.fullmatch(r"`evalkit/(\w+)/`", cells[1]) if len(cells) > 2 else None
        if folder and cells[-1] != "every stage":
            said[folder.group(1)] = {w for w in re.split(r",\s*|\s+and\s+", cells[-1])
                                     if w and w != "nothing"}
    assert said == MAY_IMPORT


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=module_name)
def test_each_stage_imports_only_what_it_may(path: Path) -> None:
    here = stage(module_name(path))
    if here not in MAY_IMPORT:
        return  # the CLI, the demo and the leaf modules
    may = MAY_IMPORT[here] | {here}
    wrong = sorted({m for m in imports(path) if stage(m) in STAGES - may})
    assert not wrong, f"{module_name(path)} ({here}) imports {wrong}"


def test_no_module_is_over_500_lines() -> None:
    long = {module_name(p): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 500}
    assert not long


def floors(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Each module's longest chain of imports down the graph, itself first (its length is
    the module's floor: 1 imports none of the graph); an AssertionError names a cycle."""
    chains: dict[str, list[str]] = {}

    def visit(node: str, path: list[str]) -> list[str]:
        if node in path:
            raise AssertionError("cycle: " + " -> ".join([*path[path.index(node):], node]))
        if node not in chains:
            below = [visit(nxt, [*path, node]) for nxt in sorted(graph.get(node, ()))]
            chains[node] = [node, *max(below, key=len, default=[])]
        return chains[node]

    for module in sorted(graph):
        visit(module, [])
    return chains


def test_no_import_cycles() -> None:
    """Between modules, as imported when a module loads, and as a type checker follows
    them (`if TYPE_CHECKING:`): a cycle hidden there is still two modules that cannot be
    understood apart. (Lazy imports inside functions are left out here: render/ draws the
    page with some; probe/'s rooms below are held to those too.)"""
    floors({module_name(p): {m for m in imports(p, at_load=True) if m in MODULES}
            for p in PACKAGE.rglob("*.py")})


def test_probe_is_rooms_of_one_job() -> None:
    """probe/ is sub-folders of one job each, and `suite` beside them runs the rest."""
    probe = PACKAGE / "probe"
    rooms = {p.parent.name for p in probe.glob("*/__init__.py")}
    top = {p.stem for p in probe.glob("*.py")} - {"__init__"}
    assert (rooms, top) == (set(PROBE_ROOMS), PROBE_TOP)


@pytest.mark.parametrize("path", sorted((PACKAGE / "probe").glob("*/*.py")), ids=module_name)
def test_each_probe_room_imports_only_rooms_below(path: Path) -> None:
    """Counting lazy imports too: the socket's room knows no adapter, an adapter no
    client, the client no load shape."""
    room = path.parent.name
    wrong = sorted({m for m in imports(path) if m.startswith("evalkit.probe.")
                    and m.split(".")[2] not in {room, *PROBE_ROOMS[room]}})
    assert not wrong, f"{module_name(path)} ({room}) imports {wrong}"


def test_probe_stands_on_at_most_8_floors() -> None:
    """probe/'s modules import one another without a cycle and at most 8 deep, counting
    every import: lazy ones inside functions and those under `if TYPE_CHECKING:` too
    (what loads later is still what a reader must know first). Deeper, and a change at
    the bottom (the socket) is read through every floor above it."""
    graph = {name: {m for m in imports(p) if m.startswith("evalkit.probe.") and m in MODULES}
             for p in (PACKAGE / "probe").rglob("*.py")
             if (name := module_name(p)).startswith("evalkit.probe.")}
    deepest = max(floors(graph).values(), key=len)
    assert len(deepest) <= PROBE_FLOORS, " -> ".join(deepest)


def test_every_package_ships_in_the_wheel() -> None:
    """pyproject.toml lists the packages by hand (templates/ and questionnaires/ are
    mapped into the package): a stage folder missing there would be missing from the wheel."""
    import tomllib

    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
                 ["tool"]["setuptools"]["packages"])
    found = {module_name(p) for p in PACKAGE.rglob("__init__.py")}
    assert found <= listed, sorted(found - listed)
