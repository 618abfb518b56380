"""`make mutation`: mutation testing of evalkit's pure core with mutmut 3 (by hand, not CI).

    python tools/mutation.py            # a clean run of every module in scope, then the report
    python tools/mutation.py analysis.validity   # only the modules named, the others'
                                                 # results kept
    python tools/mutation.py --report   # the report of the last run, without running
    python tools/mutation.py review.limits:judge_q4 review.limits:_metric
                                        # only those functions' mutants (after an edit to
                                        # them: mutmut numbers mutants per function, so the
                                        # module's other results and listed survivors stand)
    python tools/mutation.py analysis.prefill:x_prefill_fit__mutmut_150   # one mutant

Scope (mutmut's own settings are `[tool.mutmut]` in pyproject.toml): every module of the
pure core's folders, analysis/, questionnaire/ and review/ (less review/pipeline.py, which
reads files), and the probe's parsers (probe/wire/sse.py, each API's module of
probe/apis/, the field and logprob readers they use, probe/apis/fields.py and
probe/apis/logprobs.py, and
HTTP/1.1's framing rules, probe/wire/framing.py) whole; of probe/client/streamstate.py and
probe/run/connect.py only the outcome rules, and of fmt.py only the judges' numbers in
words (`PARTIAL`). Each mutant runs only the fast pure tests that reach the mutated function
(`pytest_add_cli_args_test_selection`), one worker process at a time: run it under
`nice -n 19`, as the Makefile does, so it never competes with timing-sensitive work.

mutmut keeps each function's results until that function's source changes, but a change
to the test selection or the pytest arguments in pyproject.toml drops every result (its
config fingerprint): put a pure test in a selected file rather than widening the selection
for one module.

String literals with a space in them are prose (reasons, advice, separators) and are not
mutated: tests assert the facts in a sentence (the number, the status, the tolerance), not
its wording. Every other literal, statuses and keys included, is.

The report prints the kill rate per module (killed + timed out / mutants in scope) and
checks the survivors against docs/mutation-survivors.md, where each one left is listed with
the reason it cannot change behaviour. It exits 1 when a module is below `GOAL` or a
survivor is not listed there (or a listed one no longer matches its mutant).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SURVIVORS = ROOT / "docs" / "mutation-survivors.md"
GOAL = 0.90
#: the pure core's folders: each module in them is in scope, as it is in pyproject's
#: only_mutate, but for those listed there as do_not_mutate
FOLDERS = ("analysis", "questionnaire", "review")
EXCLUDED = ("review.pipeline",)
#: modules of which only these functions are in scope (the rest is I/O, or page words)
PARTIAL = {
    "probe.client.stream": ("x__error_message",),
    "probe.client.streamstate": ("xǁStreamStateǁverdict", "xǁStreamStateǁfail"),
    "probe.run.connect": ("x_explain_failure", "x__advice", "x__advice_400"),
    "fmt": ("x_number", "x_price", "x_times"),
}
MODULES = (*(f"{d}.{p.stem}" for d in FOLDERS
             for p in sorted((ROOT / "evalkit" / d).glob("*.py"))
             if p.stem != "__init__" and f"{d}.{p.stem}" not in EXCLUDED),
           "probe.wire.sse", "probe.apis.base",
           "probe.apis.chat", "probe.apis.completions", "probe.apis.anthropic",
           "probe.apis.responses", "probe.apis.fields", "probe.apis.logprobs",
           "probe.wire.framing",
           *PARTIAL)
#: functions run while the module is imported (the schema's builders): mutmut selects
#: mutants per test call, and no test calls these, so they are outside its reach
OUT_OF_REACH = {"questionnaire.schema": ("x__nullable", "x__distribution", "x__section")}
KILLED = {"killed", "timeout", "caught by type check", "segfault"}
#: examples per property test in a mutation run (see _hypothesis_for_mutation)
EXAMPLES = 25


def scope_globs(modules: list[str]) -> list[str]:
    """The mutant names in scope, as the globs `mutmut run` takes; `module:function` (the
    function's name, or mutmut's mangled `xǁClassǁmethod`) names one function's mutants,
    and `module:x_function__mutmut_7` one mutant (a survivor re-run after a new test)."""
    globs = []
    for mod in modules:
        if ":" in mod:
            mod, func = mod.split(":", 1)
            mangled = func if func.startswith(("x_", "xǁ")) else "x_" + func
            globs.append(f"evalkit.{mod}.{mangled}"
                         + ("" if "__mutmut_" in mangled else "__mutmut_*"))
        elif mod in PARTIAL:
            globs += [f"evalkit.{mod}.{fn}__mutmut_*" for fn in PARTIAL[mod]]
        else:
            globs.append(f"evalkit.{mod}.*")
    return globs


def in_scope(mod: str, name: str) -> bool:
    """Is this mutant (`evalkit.mod.x_fn__mutmut_N`) one the report counts?"""
    func = name[len(f"evalkit.{mod}."):].rsplit("__mutmut_", 1)[0]
    if mod in PARTIAL:
        return func in PARTIAL[mod]
    return func not in OUT_OF_REACH.get(mod, ())


def _prose_free_strings() -> None:
    """Leave prose string literals (with a space) alone; mutate every other literal."""
    import libcst as cst
    from mutmut.mutation import mutators

    entry = (cst.BaseString, mutators.operator_string)
    if entry not in mutators.mutation_operators:
        sys.exit("tools/mutation.py: mutmut's string operator is not where 3.8 keeps it; "
                 "check the pinned mutmut version")

    def operator_string(node: cst.BaseString):  # type: ignore[no-untyped-def]
        if isinstance(node, cst.SimpleString) and " " in str(node.evaluated_value):
            return
        yield from mutators.operator_string(node)

    mutators.mutation_operators[mutators.mutation_operators.index(entry)] = (
        cst.BaseString, operator_string)


def _hypothesis_for_mutation() -> None:
    """Property tests, run the mutmut way: derandomized (a kill must not depend on luck),
    at most `EXAMPLES` examples each (a surviving mutant runs every test that reaches it,
    and hundreds of examples per test would take the run past the hour), and without the
    check that a test method always sees one `self` (mutmut runs the suite several times
    in one process, so it never does)."""
    import hypothesis.core
    from hypothesis import HealthCheck, settings

    settings.register_profile("mutation", derandomize=True, database=None,
                              max_examples=EXAMPLES)
    settings.load_profile("mutation")
    init = settings.__init__

    def capped(self, parent=None, **kw):  # type: ignore[no-untyped-def]
        if isinstance(kw.get("max_examples"), int):
            kw["max_examples"] = min(kw["max_examples"], EXAMPLES)
        init(self, parent, **kw)

    settings.__init__ = capped  # type: ignore[method-assign]
    original = hypothesis.core.fail_health_check

    def fail_health_check(s, message, health_check):  # type: ignore[no-untyped-def]
        if health_check != HealthCheck.differing_executors:
            original(s, message, health_check)

    hypothesis.core.fail_health_check = fail_health_check


def run(modules: list[str], clean: bool = True) -> None:
    """A mutmut run over the modules' mutants (one worker); `clean` starts from nothing,
    else the other modules' last results are kept (a re-run of one module after work
    on its tests)."""
    from mutmut.__main__ import cli

    _prose_free_strings()
    _hypothesis_for_mutation()
    if clean:
        shutil.rmtree(ROOT / "mutants", ignore_errors=True)
    else:
        # mutmut re-collects which tests reach which function only for tests it has not
        # seen: after a module is cut in two (reconcile → judges, …) its old tests still
        # map to the old names, the moved functions reach only the tests written since,
        # and their mutants "survive" by the thousand. One stats pass costs a minute.
        (ROOT / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    try:
        cli(["run", "--max-children", "1", *scope_globs(modules)], standalone_mode=False)
    except SystemExit as exc:
        if exc.code:
            raise


def _status(code: int | None) -> str:
    from mutmut.stats import status_by_exit_code

    return str(status_by_exit_code[code])


def _change(name: str, path: str) -> str:
    """The mutant's change as `old → new` (the lines that differ, stripped)."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    diff = get_diff_for_mutant(name, path=path).splitlines()[2:]
    old = " ".join(x[1:].strip() for x in diff if x.startswith("-"))
    new = " ".join(x[1:].strip() for x in diff if x.startswith("+"))
    return f"{old} → {new}"


def listed_survivors() -> dict[str, str]:
    """docs/mutation-survivors.md: mutant name -> the change it was listed with."""
    out = {}
    if SURVIVORS.exists():
        for m in re.finditer(r"^\| `([^`]+)` \| `(.*?)` \|", SURVIVORS.read_text(), re.M):
            out[m.group(1)] = m.group(2).replace("\\|", "|")
    return out


def report(modules: list[str]) -> int:
    """Kill rate per module; survivors checked against the listed ones. 0 when all is well."""
    listed = listed_survivors()
    failures = 0
    survivors: list[tuple[str, str, str]] = []
    print(f"\n{'module':<31}{'mutants':>8}{'killed':>8}{'survived':>9}{'no test':>8}"
          f"{'kill rate':>11}")
    for mod in modules:
        path = f"evalkit/{mod.replace('.', '/')}.py"
        meta = ROOT / "mutants" / f"{path}.meta"
        if not meta.exists():
            print(f"{mod:<31}  (not run: no {meta.relative_to(ROOT)})")
            failures += 1
            continue
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        statuses = {n: _status(c) for n, c in codes.items() if in_scope(mod, n)}
        count = Counter("killed" if s in KILLED else s for s in statuses.values())
        total = len(statuses)
        killed = count["killed"]
        rate = killed / total if total else 1.0
        print(f"{path:<31}{total:>8}{killed:>8}{count['survived']:>9}"
              f"{count['no tests']:>8}{rate:>10.1%}" + ("" if rate >= GOAL else "  < goal"))
        failures += rate < GOAL
        survivors += [(n, s, path) for n, s in sorted(statuses.items())
                      if s not in KILLED]
    new = []
    for name, status, path in survivors:
        change = _change(name, path)
        if listed.get(name) != change:
            new.append(f"| `{name}` | `{change.replace('|', chr(92) + '|')}` | {status} |")
    if new:
        failures += 1
        print(f"\n{len(new)} survivor(s) not listed in {SURVIVORS.relative_to(ROOT)} (or "
              "listed with another change): kill each with a test, or list it there with "
              "the reason it cannot change behaviour:")
        print("\n".join(new))
    ran = {n for n, _, _ in survivors}
    stale = [n for n in listed
             if n.rsplit(".", 1)[0][len("evalkit."):] in modules and n not in ran]
    if stale:
        print(f"\nlisted in {SURVIVORS.relative_to(ROOT)} but no longer surviving: "
              + ", ".join(stale))
    return 1 if failures else 0


def main(argv: list[str]) -> int:
    only_report = "--report" in argv
    names = [a for a in argv if not a.startswith("-")]
    unknown = [n for n in names if n.split(":")[0] not in MODULES]
    if unknown:
        sys.exit(f"unknown module {unknown[0]!r}; choose from {', '.join(MODULES)}")
    modules = list(dict.fromkeys(n.split(":")[0] for n in names)) or list(MODULES)
    os.chdir(ROOT)  # mutmut works in ./mutants and reads ./pyproject.toml
    if not only_report:
        run(names or modules, clean=not names)
    return report(modules)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
