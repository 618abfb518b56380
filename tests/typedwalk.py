"""The walk tests/test_typed_reads.py counts with: string-key reads (`x["key"]`,
`x.get("key")`) of a summary or scorecard, followed as data flows, by Python's scopes.

A value holds a summary or scorecard (is *tainted*) when it is one by name (`summary`,
`scorecard`, `card`, or a `Summary`'s raw fields), or is computed from one:

- in the scope it is bound in: a function's locals are its own (a parameter or local
  `o` in one function is not another function's `o`); a closure sees the names of the
  scope around it that it does not bind itself;
- into a call: a parameter is tainted when some call in the walked modules passes a
  tainted argument to that function (resolved by module: a function the module defines
  or imports, or `module.function`), so a helper handed a summary's part
  (`prefill_text(pre)`) is walked as reading it;
- out of a call, unless the function returns a typed value: no `Mapping`, `dict`, `Any`
  in its return annotation, only scalars and the package's classes whose every field is
  typed too (a method, which the walk cannot resolve, by every method of its name): a
  `str` of HTML is typed, a `Page` (its `Rows`, an alias the walk does not resolve)
  is not;
- out of a lookup, from what is looked in, not from the key: `cache.pop(digest)` holds
  the cache's value, not the digest's source; `i` of `enumerate` is a count;
- a write (`x["k"] = v`) is no read.

What it cannot see: a method's parameters (`obj.helper(part)`: which class's helper is
not known without types), a value stored on an object and read back elsewhere, and a
function called through a variable. A read that way is missed, so a helper that reads a
payload by key is best a module's function (or the payload typed).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

#: the names a summary or scorecard goes by where it enters a function (`card`: the
#: typed Scorecard, as `Review.card` and the renderer call it)
SUBJECTS = frozenset({"summary", "scorecard", "card"})
#: a `Summary`'s fields that still hold summary.json as written (`raw`: a level's or the
#: whole document; `run.raw` is the run directory's files, not the summary)
RAW_FIELDS = frozenset({"raw", "precision"})
#: the nodes that open a scope of their own (a class body is read as part of the scope
#: around it), and the comprehensions, whose names are their own too
SCOPE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: what a return annotation may name and still be typed: scalars and containers of typed
#: values (with the package's classes that are not mappings)
PLAIN = frozenset({"str", "int", "float", "bool", "bytes", "None", "tuple", "list", "set",
                   "frozenset", "Sequence", "Iterator", "Iterable", "Literal", "Path",
                   "Markup"})
#: a class whose bases name one of these is a mapping: read by key, it is read as JSON
MAPPINGS = frozenset({"Mapping", "MutableMapping", "dict", "TypedDict", "Any"})
#: the lookups whose value comes from the object looked in (and their default)
LOOKUPS = frozenset({"get", "pop", "setdefault"})


@dataclass
class Package:
    """What the walk knows of the package: the functions that return typed values (by
    name, for a method the walk cannot resolve), each function's parameters (by module
    and name), what each module's names resolve to, and the parameters found to take a
    summary or scorecard."""

    #: the methods whose every definition in the package returns a typed value
    stops: frozenset[str] = frozenset()
    #: "evalkit.render.pagetext.prefill_text" -> its parameters, and whether it is typed
    params: dict[str, list[str]] = field(default_factory=dict)
    typed: dict[str, bool] = field(default_factory=dict)
    #: module -> {a name in it: the function or module it stands for}
    names: dict[str, dict[str, str]] = field(default_factory=dict)
    tainted: dict[str, set[str]] = field(default_factory=dict)


def _names(node: ast.AST) -> set[str]:
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node)
            if isinstance(n, ast.Name | ast.Attribute)}


def module_name(path: Path, root: Path) -> str:
    """`evalkit/render/page.py` -> `evalkit.render.page`."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _typed_classes(trees: Iterable[ast.Module]) -> set[str]:
    """The package's classes that hold no JSON: not a mapping, and every field of a
    typed type (scalars, and such classes), to a fixpoint. A `QuestionCard` (its claim is
    the vendor's answer as written) or a `Page` (its `Rows`: an alias, not resolved) is
    not one."""
    classes = {c.name: c for t in trees for c in ast.walk(t) if isinstance(c, ast.ClassDef)}
    typed = {name for name, c in classes.items()
             if not any(_names(b) & MAPPINGS for b in c.bases)}
    while True:
        kept = {name for name in typed if all(
            _names(f.annotation) <= PLAIN | typed | {"ClassVar"}
            for f in classes[name].body if isinstance(f, ast.AnnAssign))}
        if kept == typed:
            return typed
        typed = kept


def index(trees: dict[str, ast.Module]) -> Package:
    """The package's functions (`trees` by module name): their parameters, which return
    typed values, and what each module's names stand for (its functions and imports)."""
    typed = _typed_classes(trees.values())
    pkg = Package()
    by_name: dict[str, list[bool]] = {}
    for module, tree in trees.items():
        names = pkg.names.setdefault(module, {})
        methods = {id(f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
                   for f in c.body}
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
                names.update({a.asname or a.name: f"{n.module}.{a.name}" for a in n.names})
            elif isinstance(n, ast.Import):
                names.update({a.asname: a.name for a in n.names if a.asname})
            if not isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            ok = n.returns is not None and _names(n.returns) <= PLAIN | typed
            a = n.args
            params = [p.arg for p in (*a.posonlyargs, *a.args)]
            if id(n) in methods:  # called as obj.method(...): resolved by name only
                by_name.setdefault(n.name, []).append(ok)
                continue
            names.setdefault(n.name, f"{module}.{n.name}")
            pkg.params[f"{module}.{n.name}"] = params + [p.arg for p in a.kwonlyargs]
            pkg.typed[f"{module}.{n.name}"] = ok
    pkg.stops = frozenset(n for n, oks in by_name.items() if all(oks))
    return pkg


#: each scope's own nodes, bound names and bindings, by the scope (kept with it, so an
#: id is never another node's): the walk reads each scope many times to its fixpoint
_MEMO: dict[tuple[str, int], tuple[ast.AST, object]] = {}


def _memo(kind: str, scope: ast.AST, make: Callable[[ast.AST], Iterable[T]]) -> list[T]:
    key = (kind, id(scope))
    if key not in _MEMO:
        _MEMO[key] = (scope, list(make(scope)))
    return _MEMO[key][1]  # type: ignore[return-value]


def _own(scope: ast.AST) -> list[ast.AST]:
    """The nodes that run in `scope`: not a nested function's body (its own scope), but
    a nested function's defaults and decorators, which run where it is defined."""
    return _memo("own", scope, _own_nodes)


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    if isinstance(scope, ast.Lambda):
        todo: list[ast.AST] = [scope.body]
    elif isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        todo = list(scope.body)
    else:
        todo = list(ast.iter_child_nodes(scope))
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, COMPS):
            continue
        if isinstance(n, SCOPE):
            a = n.args
            todo += [*a.defaults, *(d for d in a.kw_defaults if d is not None),
                     *getattr(n, "decorator_list", [])]
        else:
            todo += ast.iter_child_nodes(n)


def _bound(scope: ast.AST) -> set[str]:
    """The names local to `scope`: its parameters and every name bound in it."""
    return set(_memo("bound", scope, _bound_names))


def _bound_names(scope: ast.AST) -> set[str]:
    names: set[str] = set()
    if isinstance(scope, SCOPE):
        a = scope.args
        names |= {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
                  if p is not None}
    for n in _own(scope):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del):
            names.add(n.id)
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(n.name)
        elif isinstance(n, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in n.names}
    return names


def _targets(scope: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
    """(target, value) of each binding made in `scope`, a tuple's element by element
    where both sides are written out (`a, b = x, y`; `for s, label in ((x, "a"), ...)`)."""
    return _memo("targets", scope, _bindings)


def _bindings(scope: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
    for n in _own(scope):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                yield from _pairs(t, n.value)
        elif isinstance(n, ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and n.value is not None:
            yield n.target, n.value
        elif isinstance(n, ast.For | ast.AsyncFor | ast.comprehension):
            target, items = n.target, n.iter
            if isinstance(items, ast.Call) and isinstance(items.func, ast.Name) \
                    and items.func.id == "enumerate" and isinstance(target, ast.Tuple) \
                    and len(target.elts) == 2:
                yield target.elts[1], items  # `i` of `for i, x in enumerate(xs)` is a count
            elif isinstance(target, ast.Tuple) and isinstance(items, ast.Tuple | ast.List) \
                    and all(isinstance(r, ast.Tuple) and len(r.elts) == len(target.elts)
                            for r in items.elts):
                rows = [r for r in items.elts if isinstance(r, ast.Tuple)]
                for j, t in enumerate(target.elts):
                    yield t, ast.Tuple(elts=[r.elts[j] for r in rows], ctx=ast.Load())
            else:
                yield target, items


def _pairs(target: ast.AST, value: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) \
            and len(target.elts) == len(value.elts):
        for t, v in zip(target.elts, value.elts, strict=True):
            yield from _pairs(t, v)
    else:
        yield target, value


def _bound_by(target: ast.AST) -> Iterator[str]:
    """The names a binding's target makes hold its value (`x` of `x`, `(x, y)`, `x[k]`)."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for t in target.elts:
            yield from _bound_by(t)
    elif isinstance(target, ast.Starred | ast.Subscript):
        yield from _bound_by(target.value)


def _callee(call: ast.Call) -> str | None:
    """The name a call calls (`f` of `f()`, `m` of `x.m()`)."""
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) \
        else None


def resolve(call: ast.Call, names: dict[str, str]) -> str | None:
    """The package function a call calls, by module and name: `f()` (defined or imported
    in the module) or `module.f()` (an imported module's); None for a method or a
    library's function."""
    f = call.func
    if isinstance(f, ast.Name):
        return names.get(f.id)
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
            and f.value.id in names:
        return f"{names[f.value.id]}.{f.attr}"
    return None


@dataclass(frozen=True)
class Module:
    """One module as the walk reads it: the package, and what the module's names stand
    for."""

    pkg: Package
    name: str

    @property
    def names(self) -> dict[str, str]:
        return self.pkg.names.get(self.name, {})

    def returns_typed(self, call: ast.Call) -> bool:
        """The call's value is typed: the function it resolves to returns a typed value,
        or (a method) every function of its name in the package does."""
        target = resolve(call, self.names)
        if target is not None and target in self.pkg.typed:
            return self.pkg.typed[target]
        # a builtin or a library's function passes its arguments on
        return isinstance(call.func, ast.Attribute) and call.func.attr in self.pkg.stops


def carries(node: ast.AST, tainted: set[str], mod: Module) -> bool:
    """`node`'s value holds a summary or scorecard, or something read from one."""
    if isinstance(node, ast.Name):
        return node.id in tainted or node.id in SUBJECTS
    if isinstance(node, ast.Attribute):
        value = node.value
        owner = value.id if isinstance(value, ast.Name) else \
            value.attr if isinstance(value, ast.Attribute) else None
        return node.attr in SUBJECTS or (node.attr in RAW_FIELDS and owner != "run") \
            or carries(value, tainted, mod)
    if isinstance(node, ast.Subscript):  # the value looked up, not the key
        return carries(node.value, tainted, mod)
    if isinstance(node, COMPS):  # by the comprehension's own names
        inner = _tainted(node, tainted, mod, None)
        return any(carries(c, inner, mod) for c in ast.iter_child_nodes(node))
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in LOOKUPS:
            return carries(f.value, tainted, mod) or any(
                carries(a, tainted, mod) for a in node.args[1:])
        if mod.returns_typed(node):
            return False
    return any(carries(c, tainted, mod) for c in ast.iter_child_nodes(node))


def reads_key(node: ast.AST) -> ast.expr | None:
    """The expression read by a string key (`x` of `x["k"]` or `x.get("k", ...)`; a
    write, `x["k"] = v`, reads nothing)."""
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "get" and node.args \
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.func.value
    return None


def _tainted(scope: ast.AST, inherited: set[str], mod: Module, qualified: str | None
             ) -> set[str]:
    """The names in `scope` that hold a summary or scorecard's part: those of the scope
    around it it does not bind, its parameters some call passes one, then its own
    bindings to a fixpoint (`ramp` from `summary`, then `lv` from `ramp`)."""
    tainted = inherited - _bound(scope)
    if qualified is not None:
        tainted |= mod.pkg.tainted.get(qualified, set())
    while True:
        grown = {n for target, value in _targets(scope) if carries(value, tainted, mod)
                 for n in _bound_by(target)}
        if grown <= tainted:
            return tainted
        tainted |= grown


def _pass(call: ast.Call, tainted: set[str], mod: Module) -> None:
    """Mark the parameters `call` passes a summary or scorecard's part to."""
    target = resolve(call, mod.names)
    params = mod.pkg.params.get(target or "")
    if target is None or params is None:
        return
    hit = {params[i] for i, a in enumerate(call.args[:len(params)])
           if not isinstance(a, ast.Starred) and carries(a, tainted, mod)}
    hit |= {k.arg for k in call.keywords if k.arg in params and carries(k.value, tainted, mod)}
    if hit:
        mod.pkg.tainted.setdefault(target, set()).update(hit)


def walk(scope: ast.AST, mod: Module, inherited: frozenset[str] = frozenset()
         ) -> Iterator[tuple[ast.AST, bool]]:
    """Each node of `scope` and the scopes nested in it, with whether it is a string-key
    read of a summary or scorecard; calls mark the parameters they pass one to."""
    qualified = mod.names.get(scope.name) if isinstance(
        scope, ast.FunctionDef | ast.AsyncFunctionDef) else None
    tainted = _tainted(scope, set(inherited), mod, qualified)
    own = list(_own(scope))
    for n in own:
        base = reads_key(n)
        yield n, base is not None and carries(base, tainted, mod)
        if isinstance(n, ast.Call):
            _pass(n, tainted, mod)
    for n in own:
        if isinstance(n, SCOPE + COMPS):
            yield from walk(n, mod, frozenset(tainted))


def reads(trees: dict[str, ast.Module], pkg: Package) -> dict[str, list[ast.AST]]:
    """Each module's (by module name) string-key reads of a summary or scorecard, the
    parameters found to take one followed to a fixpoint across the modules."""
    while True:
        before = {k: set(v) for k, v in pkg.tainted.items()}
        found = {name: [n for n, read in walk(tree, Module(pkg, name)) if read]
                 for name, tree in trees.items()}
        if pkg.tainted == before:
            return found
