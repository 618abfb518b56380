"""Coverage of evalkit's pure core by its fast pure tests (`make test` starts with it).

The core (the analysis, the questionnaire and the review stages, SSE parsing, the plan
and the settings) is data in, data out, and its tests
say what its code does; `make mutation` then asks whether they would notice a change.
The tests are the ones `make mutation` runs (`[tool.mutmut]` in pyproject.toml) and the
plan's and settings' own.

The whole suite is not run under coverage: a tracer slows the prober that the accuracy
tests time on a 2-core machine, and would make them judge the tracer. Exit 1 when the
core's coverage falls below `FLOOR` percent.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOOR = 90
#: the pure core, by folder: data in, data out (the prober's and the adapters' pure parts
#: are mutation-tested, but their modules are mostly I/O and are tested over real HTTP)
CORE = ("evalkit/analysis/*", "evalkit/questionnaire/*", "evalkit/review/*",
        "evalkit/probe/wire/sse.py", "evalkit/probe/plan/claims.py",
        "evalkit/probe/plan/settings.py")
#: reads files: the review's edge, tested over real run directories
OMIT = ("evalkit/review/pipeline.py",)
#: fast pure tests beyond mutmut's selection
ALSO_TESTS = ("tests/probe/plan/test_claims.py", "tests/probe/plan/test_settings.py")
#: the node ids of the tests that passed under coverage (`make test` then skips them)
PASSED = ROOT / "build" / "coverage" / "passed.txt"
#: the node ids this run selected, written once it has collected: tools/suite.py's
#: foreground waits for it and leaves these tests to this run
SELECTED = ROOT / "build" / "coverage" / "selected.txt"


def main() -> int:
    """Run the core's tests under coverage, print the report, apply the floor."""
    mutmut = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    tests = [*mutmut["pytest_add_cli_args_test_selection"], *ALSO_TESTS]
    data = ROOT / "build" / "coverage"
    data.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "COVERAGE_FILE": str(data / ".coverage")}
    # mutmut's own pytest arguments: its -k leaves out the property tests that only check
    # that nothing crashes (slow, and hypothesis misreads a traced strategy); the planned
    # runs here probe a real endpoint
    args = list(mutmut["pytest_add_cli_args"])
    k = args.index("-k") + 1
    args[k] = f"({args[k]}) and not TestPlannedRuns"
    # the tests that pass here are left out of `make test`'s run of the suite that follows
    # (tests/ran_once.py): each runs once, this time under coverage
    run = [sys.executable, "-m", "coverage", "run", "--branch", "-m", "pytest", "-q",
           "--no-header", "-p", "tests.ran_once", "--record-passed", str(PASSED),
           "--record-selected", str(SELECTED), *args,
           *tests]
    PASSED.unlink(missing_ok=True)  # never a list left from an earlier run
    SELECTED.unlink(missing_ok=True)
    tested = subprocess.run(run, cwd=ROOT, env=env, check=False, capture_output=True,
                            text=True)
    if tested.returncode:
        print("\n".join(tested.stdout.splitlines()[-30:]), file=sys.stderr)
        print("core coverage: the core's tests failed under coverage", file=sys.stderr)
        return 1
    print("coverage of the pure core by its fast tests (tools/core_coverage.py):")
    report = [sys.executable, "-m", "coverage", "report", "--precision=1",
              f"--include={','.join(CORE)}", f"--omit={','.join(OMIT)}",
              f"--fail-under={FLOOR}"]
    return subprocess.run(report, cwd=ROOT, env=env,
                          check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
