"""`make bench`: run every `bench/bench_*.py` in turn, each in its own process.

Benchmarks stay out of the test suite (they take minutes and want a quiet machine).
Each prints its own report; this runner adds a header per file and a final tally, and
exits non-zero if any benchmark failed. Run one by name: `python bench/run.py reference`.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    """Run the selected benchmarks (all by default); return the number that failed."""
    files = sorted(HERE.glob("bench_*.py"))
    if argv:
        files = [f for f in files if any(name in f.stem for name in argv)]
    failed = []
    for path in files:
        print(f"=== {path.name}", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, str(path)], cwd=HERE.parent)
        print(f"=== {path.name}: {'ok' if code == 0 else f'FAILED ({code})'} in "
              f"{time.perf_counter() - started:.1f} s\n", flush=True)
        if code:
            failed.append(path.name)
    print(f"{len(files) - len(failed)} of {len(files)} benchmarks ran"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return len(failed)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
