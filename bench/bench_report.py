"""Benchmark: render the PDF scorecard, stage by stage, for a small and a large run.

Run: `.venv/bin/python bench/bench_report.py [requests_in_large_run] [chunks_per_request]`.
The small run is tests/data/report_run (134 requests); the large one is synthetic (a long
soak's worth of records), to show that charts and PDF stay bounded as records grow.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


from evalkit.questionnaire.load import load_questionnaire  # noqa: E402
from evalkit.records import RequestRecord  # noqa: E402
from evalkit.render import pdf as pdf_mod  # noqa: E402
from evalkit.render import report  # noqa: E402
from evalkit.review.scorecard import build_card  # noqa: E402
from evalkit.rundir.run import RunDir, open_run  # noqa: E402

QUESTIONNAIRE = ROOT / "questionnaires" / "headline.yaml"


def synthetic_records(n: int, per: int, seed: int = 1) -> tuple[RequestRecord, ...]:
    """n ramp requests over 5 levels with jittered TTFT and gaps."""
    rng = np.random.default_rng(seed)
    levels = (1, 2, 4, 8, 16)
    ttft = rng.gamma(4.0, 0.05, n)
    offsets = ttft[:, None] + np.cumsum(rng.gamma(2.0, 0.01, (n, per)), axis=1)
    return tuple(
        RequestRecord(id=f"r{i}", phase="ramp", level=levels[i * len(levels) // n],
                      outcome="ok", t0_s=i * 0.01, ttft_s=float(ttft[i]),
                      chunks=[(float(t), 1) for t in offsets[i]])
        for i in range(n))


def stages(run: RunDir, out: Path) -> dict[str, float]:
    """Seconds per stage of one render."""
    t: dict[str, float] = {}
    start = time.perf_counter()
    card = build_card(load_questionnaire(QUESTIONNAIRE), run.summary)
    t["scorecard"] = time.perf_counter() - start
    start = time.perf_counter()
    svgs = report.chart_svgs(card, run.summary, run.records, {})
    t["charts"] = time.perf_counter() - start
    start = time.perf_counter()
    html = pdf_mod.render_html(report.build_context(card, run, {}))
    t["context+html (charts again)"] = time.perf_counter() - start
    start = time.perf_counter()
    pdf = pdf_mod.render_pdf(html, dict(run.raw))
    t["pdf"] = time.perf_counter() - start
    out.write_bytes(pdf)
    t["charts_count"] = len(svgs)
    t["pdf_kb"] = len(pdf) / 1024
    return t


def main() -> None:
    """Print per-stage timings for the small fixture run and a large synthetic one."""
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    per = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    print(f"{platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpus")
    start = time.perf_counter()
    small = open_run(ROOT / "tests" / "data" / "report_run")
    print(f"load small run ({len(small.records)} records): {time.perf_counter() - start:.2f} s")
    big = RunDir(small.run, small.summary, synthetic_records(n, per), small.raw)
    with tempfile.TemporaryDirectory() as tmp:
        for name, run in (("small", small), (f"large ({n:,} x {per})", big)):
            for stage, value in stages(run, Path(tmp) / "card.pdf").items():
                unit = "" if stage in ("charts_count", "pdf_kb") else " s"
                print(f"{name:>22}  {stage:<28} {value:8.2f}{unit}")


if __name__ == "__main__":
    main()
