"""The house by stage, kept true: no stage imports a later one, and no module imports
itself round a cycle. Read from the source with `ast` (nothing is imported), so it holds
for lazy imports inside functions too."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "evalkit"

#: what each stage may not import (a later stage, or an edge that would make it impure)
#: the catalog is an edge like rundir (SQLite, files): it indexes runs, may start a panel
#: sample (probe) and pool it (analysis), and only the CLI reads it into a review or a PDF
FORBIDDEN = {
    "analysis": {"probe", "rundir", "review", "render", "questionnaire", "cli", "demo",
                 "reference", "verify", "catalog"},
    "questionnaire": {"probe", "rundir", "analysis", "review", "render", "cli", "demo",
                      "reference", "verify", "catalog", "workload"},
    "rundir": {"probe", "review", "render", "cli", "demo", "reference", "verify", "catalog"},
    "review": {"probe", "render", "cli", "demo", "reference", "verify", "catalog"},
    "render": {"probe", "cli", "demo", "reference", "verify", "catalog"},
    # verification reads what render wrote: it may use every stage but the prober's
    "verify": {"probe", "cli", "demo", "reference", "catalog"},
    "probe": {"review", "render", "cli", "demo", "verify", "catalog"},
    "reference": {"probe", "rundir", "analysis", "questionnaire", "review", "render", "cli",
                  "demo", "verify", "catalog"},
    "catalog": {"review", "render", "cli", "demo", "reference", "verify"},
    # the text the probe's prompts are made of, and the buyer's corpus: input read before
    # the probe, like the workload; the reference endpoint reads it too (what a vendor
    # learns from evalkit's source), and it keeps its folder beside the catalog's
    "corpus": {"probe", "rundir", "analysis", "review", "render", "cli", "demo",
               "reference", "verify", "workload", "questionnaire"},
    # the buyer's workload is input, read before the probe (its YAML reader is the
    # questionnaire's, which knows no field of either)
    "workload": {"probe", "rundir", "analysis", "review", "render", "cli", "demo",
                 "reference", "verify", "catalog"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, top_level_only: bool = False) -> Iterator[str]:
    """The evalkit modules a file imports (`from evalkit.x import y` names evalkit.x.y
    when y is a module)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    for node in nodes:
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
    for name in FORBIDDEN:
        assert (PACKAGE / name / "__init__.py").is_file(), name


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=module_name)
def test_no_stage_imports_a_later_one(path: Path) -> None:
    here = stage(module_name(path))
    banned = FORBIDDEN.get(here or "", set())
    wrong = sorted({m for m in imports(path) if stage(m) in banned})
    assert not wrong, f"{module_name(path)} ({here}) imports {wrong}"


def test_no_module_is_over_500_lines() -> None:
    long = {module_name(p): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 500}
    assert not long


def test_no_import_cycles() -> None:
    """Between modules, as imported when a module loads (its top-level imports)."""
    graph = {module_name(p): {m for m in imports(p, top_level_only=True) if m in MODULES}
             for p in PACKAGE.rglob("*.py")}
    # a package's __init__ is loaded before its modules: an edge to the package counts
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            cycle = [*path[path.index(node):], node]
            raise AssertionError(" -> ".join(cycle))
        if node in done:
            return
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, [*path, node])
        done.add(node)

    for module in sorted(graph):
        visit(module, [])


def test_every_package_ships_in_the_wheel() -> None:
    """pyproject.toml lists the packages by hand (templates/ and questionnaires/ are
    mapped into the package): a stage folder missing there would be missing from the wheel."""
    import tomllib

    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
                 ["tool"]["setuptools"]["packages"])
    found = {module_name(p) for p in PACKAGE.rglob("__init__.py")}
    assert found <= listed, sorted(found - listed)
