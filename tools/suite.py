"""`make test`'s run of the suite: the tests that time a server, and the others beside them.

The timing tests (every folder but those in `BESIDE`: the prober, the reference endpoint,
the engines, the demo) hold TTFT and inter-token gaps to a server's truth log within
milliseconds. They run in the foreground at the machine's priority, one at a time, as
before. They spend most of their wall time waiting on their servers, so a 2-core machine
sits about half idle under them. The tests of pages, reviews, records and questionnaires
(`BESIDE`: data in, data out, or a short probe whose words they check) run in a second
pytest beside them at `NICE`, on the CPU the timing tests leave: the kernel gives a
waking nice-0 task the core first, so the timing tests keep what they had (the whole suite one
process at a time was ~24 of CI's 25 minutes; docs/development.md).

A folder not listed in `BESIDE` runs in the foreground: a new kind of test is timed as
carefully as the prober's until someone decides otherwise. `BESIDE` may also name a file of
a foreground folder whose tests time nothing (the house rules read the source as text; the
provenance tests check the bytes a run wrote, not when it wrote them). A file that runs a
probe stays in the foreground even when it judges no timing: at nice 10 under a loaded
foreground, tests/probe/plan/test_corpus_privacy.py took 280 s of its 300 s timeout.

    python tools/suite.py [PYTEST ARGS...]   # e.g. --skip-passed FILE -p tests.ran_once

Exit status: the foreground's if it failed, else the other's; a group that ran no test
fails (pytest's 5), so an empty selection cannot pass.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: test folders, and files of the foreground's folders, whose tests time nothing to the
#: millisecond: they run beside the others
BESIDE = ("analysis", "catalog", "cli", "corpus", "questionnaire", "render", "review",
          "rundir", "verify", "voice", "workload",
          # the house rules: the import graph, typed reads and public names, read as text
          "test_layers.py", "test_typed_reads.py", "test_public_api.py",
          # what a run wrote (its provenance), not when it wrote it
          "test_provenance.py")
#: the priority of the tests run beside: low enough that a timing test's server and
#: client win every core they want, high enough that the others still finish
NICE = 10
#: where the tests beside write their report (printed after the foreground's)
LOG = ROOT / "build" / "suite-beside.log"


def _pytest(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", *args]


def main(argv: list[str]) -> int:
    """Run both groups; print the second's report after the first's; exit as said."""
    beside = [f"tests/{d}" for d in BESIDE if (ROOT / "tests" / d).exists()]
    LOG.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with LOG.open("w", encoding="utf-8") as log, \
            tempfile.TemporaryDirectory(prefix="evalkit-beside-") as tmp:
        # its own temporary root and no shared cache: two pytests in one checkout
        second = subprocess.Popen(
            _pytest(["-q", "-p", "no:cacheprovider", f"--basetemp={tmp}/t", *argv,
                     *beside]),
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=lambda: os.nice(NICE))
        try:
            first = subprocess.run(
                _pytest([*argv, *(f"--ignore={d}" for d in beside), "tests"]),
                cwd=ROOT, check=False).returncode
            print(f"\n--- the tests beside ({', '.join(BESIDE)}), at nice {NICE}: "
                  f"{LOG.relative_to(ROOT)} ---", flush=True)
            other = second.wait()
        finally:
            if second.poll() is None:  # ^C or a crash above: leave no pytest behind
                second.terminate()
                second.wait(30)
    print(LOG.read_text(encoding="utf-8"), end="", flush=True)
    print(f"suite: foreground exit {first}, beside exit {other}, "
          f"{time.monotonic() - started:.0f} s in all", flush=True)
    return first or other


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
