"""Outside `analysis/`, the summary and the scorecard are read by field, not by string key
(issue 42): renaming a summary figure must be one field that mypy follows, not a grep
through four folders.

The test walks the AST of review/, render/, verify/, catalog/ and cli/ for string-key
reads (`x["key"]`, `x.get("key")`) of a summary or scorecard: an expression rooted at
a name or attribute called `summary`, `scorecard` or `card`, or at a local name assigned
from one (`ramp = as_mapping(summary.get("ramp"))`, `for lv in ramp_levels(summary)`), followed
within each function. `ALLOWED` is what is not yet moved to typed fields, module by
module: the counts must match exactly, so the list pins progress and only shrinks (a
module that reads fewer lowers its entry; a module not listed reads none).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "evalkit"
FOLDERS = ("review", "render", "verify", "catalog", "cli")
#: the names a summary or scorecard goes by where it enters a function (`card`: the
#: typed Scorecard, as `Review.card` and the renderer call it; verify/'s two entries are
#: reads that were there before `card` was counted, not new ones)
SUBJECTS = frozenset({"summary", "scorecard", "card"})
#: a `Summary`'s fields that still hold summary.json as written (`raw`: a level's or the
#: whole document; `run.raw` is the run directory's files, not the summary)
RAW_FIELDS = frozenset({"raw", "precision", "vendor_metrics"})

#: string-key reads of the summary or scorecard not yet moved to typed fields, by module
ALLOWED: dict[str, int] = {
    "evalkit/catalog/entries.py": 27,
    "evalkit/render/charts/figures.py": 13,
    "evalkit/render/comparison.py": 5,
    "evalkit/render/drawn.py": 3,
    "evalkit/render/precision.py": 37,
    "evalkit/render/prompttext.py": 6,
    "evalkit/render/report.py": 13,
    "evalkit/verify/check.py": 12,
    "evalkit/verify/redraw.py": 3,
}


def _reads_key(node: ast.AST) -> ast.expr | None:
    """The expression read by a string key (`x` of `x["k"]` or `x.get("k", ...)`)."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
            and isinstance(node.slice.value, str):
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "get" and node.args \
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.func.value
    return None


def _touches(expr: ast.AST, tainted: set[str]) -> bool:
    """`expr` holds a summary or scorecard, or something read from one."""
    for n in ast.walk(expr):
        if isinstance(n, ast.Name) and (n.id in tainted or n.id in SUBJECTS):
            return True
        if isinstance(n, ast.Attribute) and (n.attr in SUBJECTS or (
                n.attr in RAW_FIELDS and _owner(n) != "run")):
            return True
    return False


def _owner(attribute: ast.Attribute) -> str | None:
    """The name an attribute is read from (`run` of `run.raw` or `self.run.raw`)."""
    value = attribute.value
    return value.id if isinstance(value, ast.Name) else \
        value.attr if isinstance(value, ast.Attribute) else None


def _targets(node: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
    """(target, value) of each binding in `node`'s scope."""
    for n in ast.walk(node):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                yield t, n.value
        elif isinstance(n, ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and n.value is not None:
            yield n.target, n.value
        elif isinstance(n, ast.For | ast.comprehension):
            yield n.target, n.iter


def _tainted(scope: ast.AST) -> set[str]:
    """The local names that hold what was read from a summary or scorecard (to a fixpoint:
    `ramp` from `summary`, then `lv` from `ramp`)."""
    tainted: set[str] = set()
    while True:
        grown = {n.id for target, value in _targets(scope) if _touches(value, tainted)
                 for n in ast.walk(target) if isinstance(n, ast.Name)}
        if grown <= tainted:
            return tainted
        tainted |= grown


def string_key_reads(source: str) -> int:
    """How many string-key reads of a summary or scorecard `source` makes."""
    tree = ast.parse(source)
    scopes = [n for n in ast.walk(tree)
              if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)]
    count = 0
    counted: set[int] = set()
    for scope in [*scopes[::-1], tree]:  # innermost first: a read counts in its own scope
        tainted = _tainted(scope)
        for n in ast.walk(scope):
            base = _reads_key(n)
            if base is not None and id(n) not in counted and _touches(base, tainted):
                counted.add(id(n))
                count += 1
    return count


def counts() -> dict[str, int]:
    """Each module's string-key reads (those with any)."""
    out = {}
    for folder in FOLDERS:
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            n = string_key_reads(path.read_text(encoding="utf-8"))
            if n:
                out[str(path.relative_to(PACKAGE.parent))] = n
    return out


def test_the_summary_and_scorecard_are_read_by_field_outside_analysis() -> None:
    got = counts()
    more = {m: (n, ALLOWED.get(m, 0)) for m, n in got.items() if n > ALLOWED.get(m, 0)}
    fewer = {m: (got.get(m, 0), n) for m, n in ALLOWED.items() if got.get(m, 0) < n}
    assert not more, f"string-key reads of the summary or scorecard (read, allowed): {more}; " \
        "read the typed fields (evalkit.analysis.summary.Summary.sections) instead"
    assert not fewer, f"fewer string-key reads than ALLOWED lists (read, allowed): {fewer}; " \
        "lower (or drop) their entries: the list only shrinks"


def test_the_walk_finds_reads_through_locals_and_not_typed_fields() -> None:
    """What the walk counts: a read through a local taken from the summary counts, the
    same figure read by field does not."""
    by_key = ("def f(summary):\n"
              "    ramp = as_mapping(summary.get('ramp'))\n"
              "    for lv in ramp.get('levels') or []:\n"
              "        x = lv['ttft_s']\n"
              "    return summary['connect']['tokens_per_chunk']\n")
    by_field = ("def f(summary):\n"
                "    ramp = summary.sections.ramp\n"
                "    return [lv.ttft_s.p50 for lv in ramp.levels], scores['Q1']\n")
    assert string_key_reads(by_key) == 5 and string_key_reads(by_field) == 0


def test_no_stage_takes_a_scorecard_or_a_mapping() -> None:
    """The scorecard crosses every boundary typed (issue 42): no annotation in the package
    accepts `Scorecard | Mapping` (or a dict) for it, so no reader can fall back to keys."""
    unions = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
                names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                if "Scorecard" in names and names & {"Mapping", "dict"}:
                    unions.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not unions, f"Scorecard | Mapping unions: {unions}"
