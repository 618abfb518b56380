"""Outside `analysis/`, the summary and the scorecard are read by field, not by string key
(issue 42): renaming a summary figure must be one field that mypy follows, not a grep
through four folders.

The test walks the AST of every module but the readers (analysis/, the importers) and
the raw-document checks (`RAW_DOCUMENTS`, each with why) for string-key reads
(`x["key"]`, `x.get("key")`) of a summary or scorecard: an expression rooted at a name or
attribute called `summary`, `scorecard` or `card`, or at a name that holds what was read
from one (`ramp = as_mapping(summary.get("ramp"))`, `for lv in ramp_levels(summary)`),
followed by Python's scopes and into the functions it is passed to (`tests/typedwalk.py`
says how). `ALLOWED` is what is not yet moved to typed fields, module by module: the
counts must match exactly, so the list pins progress and only shrinks (a module that
reads fewer lowers its entry; a module not listed reads none). `as_mapping` is pinned the
same way (`AS_MAPPING_RETYPING`).

Nothing is left: the page's last reads went when what they read was typed (issue 42).
The vendor's metrics page is `VendorMetrics.levels`/`phases` (typed windows and gauges,
`evalkit.analysis.summary_checks`), the tolerances the scorecard's `Tolerances` with
typed `SloProfile`s, "Your workload" and "What it costs" frozen sections
(`evalkit.render.workload`, `evalkit.render.costtext`), a demonstration's stand-in
run.json's typed `StandIn`, the vendor's Q6 answer its `PanelClaim`, Q3's capacity model
one `_Rate` per rate (`evalkit.review.rates`), and the generic words for an answer
(`evalkit.render.words.mapping`) are handed its currency and headline unit by the typed
answer instead of looking them up beside each field. The walk follows a summary's part
into the helper it is handed to (`prefill_text(pre)`), so those helpers count too.
It no longer follows a value through a function that returns a typed one (a `Page`, the
`str` of its HTML) nor from a key into what it looks up, so verify/redraw.py's PDF
reader (`o.geometry["mediabox"]`, reached through the scorecard's digest) is not counted.
probe/ is walked too: the run's write-up hands the probe a typed `Summary`
(`evalkit.rundir.writeup`), and its closing lines (probe/run/progress.py) and
`RunResult.validity` (probe/suite.py) read its fields.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from tests.typedwalk import index, module_name, reads

PACKAGE = Path(__file__).resolve().parent.parent / "evalkit"
#: where JSON is read into typed values: the one place `as_mapping` and string keys
#: belong (the summary's readers, and the importers reading a peer tool's files)
READERS = ("evalkit/analysis/", "evalkit/rundir/importers/")
#: the raw-document integrity checks: they read summary.json and run.json as written,
#: before anything is typed, because their job is the document's bytes (a summary
#: checked against the records, a run.json repaired field by field, the summary derived
#: again from the records, the schema checked before the reading)
RAW_DOCUMENTS = {
    "evalkit/rundir/audit.py": "summary.json checked as untrusted against the records",
    "evalkit/rundir/checked.py": "run.json and summary.json checked and repaired as read",
    "evalkit/rundir/rederive.py": "the summary derived again from the records, as JSON",
    "evalkit/rundir/run.py": "summary.json's schema checked before it is read as one",
    "evalkit/rundir/voicecheck.py": "a voice run's summary.json compared, key by key, with "
                                    "its re-derivation from the turns",
}

#: string-key reads of the summary or scorecard not yet moved to typed fields, by module
ALLOWED: dict[str, int] = {}
#: modules outside READERS and RAW_DOCUMENTS that still call `as_mapping`, by how many
#: times they name it: none is left (issue 42); a new one fails the test
AS_MAPPING_RETYPING: dict[str, int] = {}


def string_key_reads(source: str) -> int:
    """How many string-key reads of a summary or scorecard one module's `source` makes
    (its own functions the only ones the walk knows)."""
    tree = ast.parse(source)
    pkg = index({"m": tree})
    return len(reads({"m": tree}, pkg)["m"])


@functools.cache
def _trees() -> dict[str, tuple[str, ast.Module]]:
    """Every module of the package: its name -> (its path from the repository, its AST)."""
    return {module_name(p, PACKAGE.parent): (str(p.relative_to(PACKAGE.parent)),
                                             ast.parse(p.read_text(encoding="utf-8")))
            for p in sorted(PACKAGE.rglob("*.py"))}


def _exempt(path: str) -> bool:
    return path.startswith(READERS) or path in RAW_DOCUMENTS


def counts() -> dict[str, int]:
    """Each module's string-key reads (those with any), outside READERS and RAW_DOCUMENTS."""
    trees = _trees()
    walked = {m: tree for m, (path, tree) in trees.items() if not _exempt(path)}
    found = reads(walked, index({m: tree for m, (_, tree) in trees.items()}))
    return {trees[m][0]: len(nodes) for m, nodes in found.items() if nodes}


def _shrinks_only(got: dict[str, int], allowed: dict[str, int], what: str) -> None:
    more = {m: (n, allowed.get(m, 0)) for m, n in got.items() if n > allowed.get(m, 0)}
    fewer = {m: (got.get(m, 0), n) for m, n in allowed.items() if got.get(m, 0) < n}
    assert not more, f"{what} (found, allowed): {more}; read the typed fields " \
        "(evalkit.analysis.summary.Summary.sections, the Scorecard's) instead"
    assert not fewer, f"fewer {what} than allowed (found, allowed): {fewer}; lower (or " \
        "drop) their entries: the list only shrinks"


def test_the_summary_and_scorecard_are_read_by_field_outside_analysis() -> None:
    _shrinks_only(counts(), ALLOWED, "string-key reads of the summary or scorecard")


def as_mapping_uses(tree: ast.AST) -> int:
    """How many times a module names `as_mapping` (imports and calls)."""
    return sum(1 for n in ast.walk(tree)
               if (isinstance(n, ast.Name) and n.id == "as_mapping")
               or (isinstance(n, ast.Attribute) and n.attr == "as_mapping")
               or (isinstance(n, ast.alias) and n.name == "as_mapping"))


def test_as_mapping_is_where_json_is_read() -> None:
    """`as_mapping` (a JSON value taken as a mapping, whatever it is) belongs where JSON is
    read into types: analysis/, the importers, the raw-document checks. Anywhere else it
    is a payload still travelling as a dict."""
    got = {path: n for path, tree in _trees().values()
           if not _exempt(path) and (n := as_mapping_uses(tree))}
    _shrinks_only(got, AS_MAPPING_RETYPING, "as_mapping uses")
    assert as_mapping_uses(ast.parse("from x import as_mapping\nas_mapping(a).get('b')\n"
                                     "y.as_mapping(c)\n")) == 3
    for path in RAW_DOCUMENTS:  # a named exception is a module that exists
        assert (PACKAGE.parent / path).is_file(), path


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


def test_the_walk_counts_what_flows_not_what_shares_a_name() -> None:
    """verify/redraw.py's shape: a digest of the scorecard keys a cache, and a Page built
    from it is drawn into a PDF that a reader walks by key. None of that reads the
    scorecard: what a cache holds is not its key, a `str` of HTML is typed, and another
    function's parameter `o` is not this one's `o`. The reads that do flow still count:
    through a closure, a module global, a helper's parameter, a comprehension."""
    redraw_shape = (
        "def page_html(page: Page) -> str: ...\n"
        "def redraw(card, cache):\n"
        "    key = hashlib.sha256(json.dumps(card.to_json()).encode()).digest()\n"
        "    drawn = cache.pop(key, None)\n"
        "    if drawn is None:\n"
        "        drawn = render(page_html(build(card)))\n"
        "    for o in card.to_json().values():\n"
        "        pass\n"
        "    return compare(reader(drawn))\n"
        "def compare(o):\n"
        "    return o.geometry['mediabox'], [p['/Contents'] for p in o.pages]\n"
        "class Page: ...\n")
    assert string_key_reads(redraw_shape) == 0
    flowing = (
        "RAMP = load().summary['ramp']\n"                  # 1: a module global
        "def levels():\n"
        "    return RAMP['levels']\n"                       # 2: read through the global
        "def prefill_text(pre):\n"
        "    return pre.get('tokens_per_s')\n"              # 3: a parameter handed a part
        "def f(summary):\n"
        "    pre = as_mapping(summary.get('prefill'))\n"    # 4
        "    text = prefill_text(pre)\n"
        "    def inner():\n"
        "        return pre['reason']\n"                    # 5: a closure
        "    return [lv['n'] for lv in as_list(summary.get('levels'))]\n")  # 6, 7
    assert string_key_reads(flowing) == 7
    # each rule of the walk matters: the old walk (names pooled across a module) counted
    # `o` here, and with it verify/redraw.py's 3 false reads
    pooled = ("def f(summary):\n    for o in summary.values():\n        pass\n"
              "def g(o):\n    return o['x']\n")
    assert string_key_reads(pooled) == 0
    assert string_key_reads(pooled.replace("def g(o)", "def g(o=None)").replace(
        "        pass\n", "        g(o)\n")) == 1  # unless f hands its `o` to g


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
