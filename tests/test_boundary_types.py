"""No `Any` in a signature that crosses a stage boundary (issue 42): what one stage hands
another is typed, so mypy follows a renamed field from the writer to every reader.

A stage is a top-level package or module under evalkit/ (`analysis`, `probe`, `rundir`,
`fmt`, `provenance`, ...). The test reads the source with `ast` (nothing is imported) and
finds every public function, and every public method, property and field (a dataclass's,
or `self.x: T` in a method) of a public class, whose annotations name `Any` (`Any`,
`dict[str, Any]`, `Mapping[str, Any]`, a quoted annotation too) and that another stage
uses:

- a function or class another stage imports (`from evalkit.x import f`, under
  `TYPE_CHECKING` too, or `import evalkit` then `evalkit.f`), followed through a
  package's re-exports to the module that defines it;
- a class named in the annotations of anything that crosses (`open_run() -> RunDir`:
  every caller holds a `RunDir` without importing it), and so on down.

`EXCEPTIONS` names what is not yet typed and why; it only shrinks. Where a value really
is free-form JSON, `evalkit.analysis.jsonread.Json` says so (it is `object`: a reader
must look before it uses it); where anything printable is meant, `object`.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "evalkit"

#: signatures that still name Any across a boundary, each with why; only shrinks
EXCEPTIONS: dict[str, str] = {}


@dataclass(frozen=True)
class Signature:
    """One public callable or field: its qualified name and its annotations."""

    qualname: str
    module: str
    annotations: tuple[ast.expr, ...]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def stage(module: str) -> str:
    """`evalkit.analysis.stats` -> analysis; `evalkit.fmt` -> fmt; `evalkit` -> evalkit."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


@functools.cache
def trees() -> dict[str, ast.Module]:
    return {module_name(p): ast.parse(p.read_text(encoding="utf-8"))
            for p in sorted(PACKAGE.rglob("*.py"))}


def names_any(node: ast.expr | None) -> bool:
    """Whether an annotation names `Any` (`typing.Any`, or inside a quoted annotation)."""
    if node is None:
        return False
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id == "Any":
            return True
        if isinstance(n, ast.Attribute) and n.attr == "Any":
            return True
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            try:
                quoted = ast.parse(n.value, mode="eval").body
            except SyntaxError:
                continue
            if names_any(quoted):
                return True
    return False


def _function_annotations(f: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[ast.expr, ...]:
    a = f.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
    return tuple(x for x in [*(p.annotation for p in params if p), f.returns] if x)


def _public(name: str) -> bool:
    return not name.startswith("_") or name in ("__init__", "__call__")


def signatures(module: str, tree: ast.Module) -> Iterator[tuple[str, Signature]]:
    """(top-level name it belongs to, signature) for each public function, and each public
    method, property and annotated field of each public class, at the module's top level."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _public(node.name):
            yield node.name, Signature(f"{module}.{node.name}", module,
                                       _function_annotations(node))
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                qual = f"{module}.{node.name}"
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    if _public(item.name):
                        yield node.name, Signature(f"{qual}.{item.name}", module,
                                                   _function_annotations(item))
                    for n in ast.walk(item):  # an attribute its methods declare
                        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Attribute) \
                                and isinstance(n.target.value, ast.Name) \
                                and n.target.value.id == "self" \
                                and not n.target.attr.startswith("_"):
                            yield node.name, Signature(f"{qual}.{n.target.attr}", module,
                                                       (n.annotation,))
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) \
                        and not item.target.id.startswith("_"):
                    yield node.name, Signature(f"{qual}.{item.target.id}", module,
                                               (item.annotation,))


@functools.cache
def _api() -> dict[str, str]:
    """evalkit/__init__.py's lazy public API: name -> the module that defines it."""
    for node in trees()["evalkit"].body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "_API" for t in node.targets):
            value = ast.literal_eval(node.value)
            assert isinstance(value, dict)
            return {str(k): str(v) for k, v in value.items()}
    return {}


@functools.cache
def _imports(module: str) -> dict[str, tuple[str, str]]:
    """A module's `from evalkit... import name [as alias]`: alias -> (module, name)."""
    out = {}
    for node in ast.walk(trees()[module]):
        if isinstance(node, ast.ImportFrom) and node.module \
                and node.module.split(".")[0] == "evalkit" and node.level == 0:
            for alias in node.names:
                out[alias.asname or alias.name] = (node.module, alias.name)
    return out


def defining(module: str, name: str) -> tuple[str, str]:
    """Where `module.name` is defined, through re-exports (a package's `__init__`)."""
    seen = set()
    while (module, name) not in seen:
        seen.add((module, name))
        tree = trees().get(module)
        if tree is None:
            break
        if module == "evalkit" and name in _api():
            module = _api()[name]
            continue
        imported = _imports(module).get(name)
        if imported is None or any(
                isinstance(n, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
                and n.name == name for n in tree.body):
            break
        module, name = imported
    return module, name


@functools.cache
def used_across() -> set[tuple[str, str]]:
    """(defining module, top-level name) of everything a stage other than its own names:
    imported, reached as `evalkit.name`, or a class in the annotations of such a thing."""
    crossing: set[tuple[str, str]] = set()
    for module, tree in trees().items():
        if module == "evalkit":
            continue
        for target_module, name in _imports(module).values():
            where = defining(target_module, name)
            if stage(where[0]) != stage(module):
                crossing.add(where)
        if any(isinstance(n, ast.Import) and any(a.name == "evalkit" for a in n.names)
               for n in ast.walk(tree)):
            for n in ast.walk(tree):
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) \
                        and n.value.id == "evalkit" and n.attr in _api():
                    where = defining("evalkit", n.attr)
                    if stage(where[0]) != stage(module):
                        crossing.add(where)
    # a class a crossing signature names crosses with it (its holder never imports it)
    todo = list(crossing)
    while todo:
        module, name = todo.pop()
        tree = trees().get(module)
        if tree is None:
            continue
        local = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        imports = _imports(module)
        for owner, sig in signatures(module, tree):
            if owner != name:
                continue
            for ann in sig.annotations:
                for n in ast.walk(ann):
                    if not isinstance(n, ast.Name):
                        continue
                    if n.id in local:
                        where = (module, n.id)
                    elif n.id in imports:
                        where = defining(*imports[n.id])
                    else:
                        continue
                    if where not in crossing:
                        crossing.add(where)
                        todo.append(where)
    return crossing


def untyped_across() -> set[str]:
    """The qualified names of crossing signatures that name Any."""
    crossing = used_across()
    return {sig.qualname for module, tree in trees().items()
            for owner, sig in signatures(module, tree)
            if (module, owner) in crossing and any(names_any(a) for a in sig.annotations)}


def test_no_any_crosses_a_stage_boundary() -> None:
    found = untyped_across()
    new = sorted(found - set(EXCEPTIONS))
    gone = sorted(set(EXCEPTIONS) - found)
    assert not new, "signatures that hand Any across a stage boundary (type them: a " \
        "frozen dataclass where keys are read, evalkit.analysis.jsonread.Json where the " \
        f"value is free-form JSON, object where anything goes): {new}"
    assert not gone, f"typed now: drop them from EXCEPTIONS (the list only shrinks): {gone}"


def test_the_walk_sees_what_crosses() -> None:
    """The detector itself: Any inside a container or a quoted annotation counts, object
    does not; a re-export is followed to the module that defines the name."""
    def any_in(source: str) -> bool:
        f = ast.parse(source).body[0]
        assert isinstance(f, ast.FunctionDef)
        return any(names_any(a) for a in _function_annotations(f))
    assert any_in("def f(x: Mapping[str, Any]) -> None: ...")
    assert any_in("def f(x: int) -> 'dict[str, Any]': ...")
    assert any_in("def f(*a: typing.Any) -> None: ...")
    assert not any_in("def f(x: Mapping[str, Json], y: object) -> Anything: ...")
    cls = ast.parse("class C:\n    def __init__(self) -> None:\n"
                    "        self.meta: dict[str, Any] = {}\n        self._own: Any = 1\n")
    assert [(owner, sig.qualname) for owner, sig in signatures("m", cls)
            if any(names_any(a) for a in sig.annotations)] == [("C", "m.C.meta")]
    assert defining("evalkit", "summarize") == ("evalkit.analysis.summarize", "summarize")
    crossing = used_across()
    # imported by rundir and probe; and RunDir crosses because open_run returns it
    assert ("evalkit.analysis.summarize", "summarize") in crossing
    assert ("evalkit.rundir.run", "RunDir") in crossing
    assert ("evalkit.fmt", "fmt_ms") in crossing
    for name in EXCEPTIONS:  # a named exception is a real name
        assert any(sig.qualname == name for m, t in trees().items()
                   for _, sig in signatures(m, t)), name
